"""Sphinx extension of the book's build: what every page carries besides its chapter. Named in ``_config.yml``.

- **One search box.** pydata-sphinx-theme fills the top bar with a search field when ``navbar_persistent`` is unset,
  and sphinx-book-theme puts a second one in the sidebar: a reader saw two. The top bar is left empty; the sidebar's
  field (wide screens) and the article header's search button (narrow screens, where the sidebar is folded away)
  remain, one of them visible at each width.
- **MathJax only where there is math.** Sphinx loads MathJax on a page when the page *or any page its toctree
  includes* has math, so "Start here" (the root of the table of contents) loaded 1 MB of MathJax for no formula.
"""

from __future__ import annotations

from typing import Any


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


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("config-inited", _no_top_bar_search)
    app.connect("html-page-context", _mathjax_only_on_pages_with_math, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
