"""_ext/plotly_assets.py, the book build's Sphinx extension: plotly.js served from the book, only where a figure is."""

from types import SimpleNamespace

import torch
from bookfiles import load_extension

from lib.show import interactive


def test_sphinx_hook_loads_plotly_only_on_figure_pages_and_writes_it(tmp_path):
    plotly_assets = load_extension("plotly_assets")
    added = []
    app = SimpleNamespace(
        add_js_file=lambda name, **options: added.append((name, options)),
        outdir=str(tmp_path),
        builder=SimpleNamespace(format="html"),
    )
    plotly_assets._load_on_figure_pages(app, "chapters/05", "page.html", {"body": "<p>text</p>"}, None)
    assert added == []
    body = interactive.page_html(
        interactive.attention_figure(
            (torch.ones(3, 3).tril() / torch.arange(1, 4)[:, None]).expand(2, 1, 1, 3, 3), range(2)
        )
    )
    plotly_assets._load_on_figure_pages(app, "chapters/05", "page.html", {"body": body}, None)
    assert added == [(interactive.PLOTLY_JS, {"loading_method": "defer"})]  # the page paints before plotly.js runs
    plotly_assets._copy_plotly_js(app, None)
    js = (tmp_path / "_static" / interactive.PLOTLY_JS).read_text()
    assert len(js) > 1_000_000 and "window.Plotly" in js
