"""Sphinx extension of the book's build: serve the installed plotly's ``plotly.min.js`` from
``_static/`` and load it on the pages that show an interactive figure (no CDN). Named in ``_config.yml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lib.show.interactive import FIGURE_CLASS, PLOTLY_JS


def _copy_plotly_js(app: Any, exception: Exception | None) -> None:
    """After an HTML build, write the installed plotly's bundled plotly.js into the book's ``_static/``."""
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    from plotly.offline import get_plotlyjs

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    (static / PLOTLY_JS).write_text(get_plotlyjs(), encoding="utf-8")


def _load_on_figure_pages(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Load plotly.js only on pages with a figure, deferred: its 4.8 MB no longer hold back the page's first paint (the
    figures' scripts draw at DOMContentLoaded, after deferred scripts have run)."""
    if FIGURE_CLASS in context.get("body", ""):
        app.add_js_file(PLOTLY_JS, loading_method="defer")


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("html-page-context", _load_on_figure_pages)
    app.connect("build-finished", _copy_plotly_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
