"""Sphinx extension of the book's build: a visible "Open in Colab" bar at the top of every chapter page, with one
link to the chapter's learner edition (``learner/``, solutions removed) and one to the full chapter. The addresses
come from ``_config.yml``'s ``repository`` (url and branch), so a fork's pages link its own notebooks. Named in
``_config.yml`` under ``sphinx.local_extensions``.

A translated book (``scripts/build_translation.py``) sets ``colab_words`` (the bar's words in its language) and
``colab_learner`` (chapter stem -> its learner notebook in that language, ``learner/ko/05_x.ipynb``, for the chapters
whose translation is complete); the other chapters open the English learner edition."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from check_repository_url import owner_and_name  # noqa: E402

COLAB = "https://colab.research.google.com/github"
CHAPTER = re.compile(r"chapters/(\d\d_\w+)")
BAR_CLASS = "colab-links"
WORDS = {
    "intro": "Run it in Colab:",
    "exercises": "the exercises",
    "learner": "(learner edition, solutions removed)",
    "full": "the full chapter",
}
"""The bar's words in English."""


def colab_url(repository: str, branch: str, path: str) -> str:
    """``https://github.com/OWNER/NAME``, ``main``, ``learner/05_x.ipynb`` -> the address Colab opens it at."""
    owner, name = owner_and_name(repository)
    return f"{COLAB}/{owner}/{name}/blob/{branch}/{path}"


def bar(
    repository: str, branch: str, chapter: str, words: dict[str, str] = WORDS, learner_path: str | None = None
) -> str:
    """The HTML of the bar for ``chapter`` (a file stem such as ``05_induction_heads``), in ``words``, opening the
    learner notebook ``learner_path`` (default ``learner/<chapter>.ipynb``)."""
    learner = colab_url(repository, branch, learner_path or f"learner/{chapter}.ipynb")
    full = colab_url(repository, branch, f"chapters/{chapter}.ipynb")
    return (
        f'<p class="{BAR_CLASS}">{words["intro"]} <a href="{learner}">{words["exercises"]}</a> {words["learner"]} · '
        f'<a href="{full}">{words["full"]}</a></p>\n'
    )


def _add_bar(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    match = CHAPTER.fullmatch(pagename)
    if match is None or "body" not in context:
        return
    repository = app.config.html_theme_options.get("repository_url", "")
    branch = app.config.html_theme_options.get("repository_branch", "main")
    chapter = match.group(1)
    learner = (app.config.colab_learner or {}).get(chapter)
    context["body"] = bar(repository, branch, chapter, app.config.colab_words or WORDS, learner) + context["body"]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.add_config_value("colab_words", None, "html")
    app.add_config_value("colab_learner", None, "html")
    app.connect("html-page-context", _add_bar)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
