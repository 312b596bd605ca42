"""Sphinx extension of the book's build: what every page carries besides its chapter. Named in ``_config.yml``.

- **One search box.** pydata-sphinx-theme fills the top bar with a search field when ``navbar_persistent`` is unset,
  and sphinx-book-theme puts a second one in the sidebar: a reader saw two. The top bar is left empty; the sidebar's
  field (wide screens) and the article header's search button (narrow screens, where the sidebar is folded away)
  remain, one of them visible at each width.
- **No icon script.** pydata-sphinx-theme loads ``fontawesome.js`` (1.5 MB, 530 KB compressed, the largest file of
  every page) to turn icon tags into SVGs, though its stylesheet already draws the same icons from web fonts: the
  script tag is taken out of the written pages, and the icons still show.
- **MathJax only where there is math.** Sphinx loads MathJax on a page when the page *or any page its toctree
  includes* has math, so "Start here" (the root of the table of contents) loaded 1 MB of MathJax for no formula.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ICON_SCRIPT = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\s*')


def _no_top_bar_search(app: Any, config: Any) -> None:
    """Leave pydata-sphinx-theme's top bar without its default search field (unless the book sets one)."""
    config.html_theme_options.setdefault("navbar_persistent", [])


def _mathjax_only_on_pages_with_math(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Drop the MathJax scripts Sphinx added to a page whose own text has no math (runs after sphinx.ext.mathjax)."""
    if app.env.get_domain("math").data["has_equations"].get(pagename, False):
        return
    scripts = context.get("script_files", [])
    for script in [s for s in scripts if _is_mathjax(s, app.config.mathjax_path)]:
        scripts.remove(script)


def _is_mathjax(script: Any, mathjax_path: str) -> bool:
    """Whether a page script (Sphinx's ``_JavaScript``) is MathJax itself or its ``window.MathJax`` configuration."""
    filename = str(getattr(script, "filename", ""))  # "_static/" + mathjax_path
    return (bool(filename) and filename.endswith(mathjax_path)) or "window.MathJax" in script.attributes.get("body", "")


def without_icon_script(html: str) -> str:
    """A written page without pydata-sphinx-theme's ``fontawesome.js`` script tag."""
    return ICON_SCRIPT.sub("", html)


def _drop_icon_script(app: Any, exception: Exception | None) -> None:
    """After an HTML build, take the icon script out of every page written."""
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if (cleaned := without_icon_script(html)) != html:
            page.write_text(cleaned, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("config-inited", _no_top_bar_search)
    app.connect("html-page-context", _mathjax_only_on_pages_with_math, priority=900)
    app.connect("build-finished", _drop_icon_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
