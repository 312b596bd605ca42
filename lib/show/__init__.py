"""What the chapters show: they take data and draw it, and never train.

- :mod:`lib.show.plot`: every static figure, one module per topic (``plot.ocr_loss_curves(...)``).
- :mod:`~lib.show.interactive`: browser-side plotly figures for the rendered book (no kernel needed).
- :mod:`~lib.show.widgets`: ipywidgets explorers for a running notebook.
- :mod:`~lib.show.display`: Markdown tables.
- :mod:`~lib.show.key_results`: the numbers a chapter's "Key results" box shows, recorded where they are computed.
"""
