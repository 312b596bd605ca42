"""Sphinx extension of the book's build: a link at the top of every page to the same page in the book's other
language (issue 42). The English book sets ``language_switch: {label: 한국어, root: ko/}`` (the Korean book is built
into ``ko/`` of the same site, ``scripts/build_translation.py``); the Korean book sets ``{label: English, root: ../}``.
Named in ``_config.yml`` under ``sphinx.local_extensions``."""

from __future__ import annotations

from typing import Any

SWITCH_CLASS = "language-switch"


def switch_href(pagename: str, root: str) -> str:
    """The address of page ``pagename`` ("chapters/05_x") of the other edition, relative to this page: up to this
    site's root, then ``root`` ("ko/" or "../")."""
    return "../" * pagename.count("/") + root + pagename + ".html"


def _add_switch(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    switch = app.config.language_switch
    if not switch or "body" not in context or doctree is None:
        return
    lang = switch.get("lang", "")
    link = f'<a href="{switch_href(pagename, switch["root"])}" hreflang="{lang}" lang="{lang}">{switch["label"]}</a>'
    context["body"] = f'<p class="{SWITCH_CLASS}">{link}</p>\n' + context["body"]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.add_config_value("language_switch", None, "html")
    app.connect("html-page-context", _add_switch)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
