"""Sphinx extension of the book's build: a visible "Open in Colab" bar at the top of every chapter page, with one
link to the chapter's learner edition (``learner/``, solutions removed) and one to the full chapter. The addresses
come from ``_config.yml``'s ``repository`` (url and branch), so a fork's pages link its own notebooks. Named in
``_config.yml`` under ``sphinx.local_extensions``."""

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


def colab_url(repository: str, branch: str, path: str) -> str:
    """``https://github.com/OWNER/NAME``, ``main``, ``learner/05_x.ipynb`` -> the address Colab opens it at."""
    owner, name = owner_and_name(repository)
    return f"{COLAB}/{owner}/{name}/blob/{branch}/{path}"


def bar(repository: str, branch: str, chapter: str) -> str:
    """The HTML of the bar for ``chapter`` (a file stem such as ``05_induction_heads``)."""
    learner = colab_url(repository, branch, f"learner/{chapter}.ipynb")
    full = colab_url(repository, branch, f"chapters/{chapter}.ipynb")
    return (
        f'<p class="{BAR_CLASS}">Run it in Colab: <a href="{learner}">the exercises</a> (learner edition, solutions '
        f'removed) · <a href="{full}">the full chapter</a></p>\n'
    )


def _add_bar(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    match = CHAPTER.fullmatch(pagename)
    if match is None or "body" not in context:
        return
    repository = app.config.html_theme_options.get("repository_url", "")
    branch = app.config.html_theme_options.get("repository_branch", "main")
    context["body"] = bar(repository, branch, match.group(1)) + context["body"]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("html-page-context", _add_bar)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
