"""Sphinx extension of the book's build: a link to one of the book's own published pages stays inside the book.

The chapters link the book's other pages at their published address (``https://OWNER.github.io/NAME/chapters/
05_induction_heads.html``, :func:`check_repository_url.pages_url`), because a relative link to a notebook opens neither
in Colab nor in the learner edition. In the built book such a link is made relative (``05_induction_heads.html``):
a reader of a local build, or of a fork's site, stays in the book in front of them. Named in ``_config.yml``.
"""

from __future__ import annotations

import posixpath
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from check_repository_url import pages_url  # noqa: E402


def relative_link(uri: str, docname: str, base: str) -> str | None:
    """``{base}/chapters/05_x.html#a`` seen from document ``chapters/02_y`` -> ``05_x.html#a``; None for a link
    elsewhere."""
    if not uri.startswith(base + "/"):
        return None
    path, _, anchor = uri[len(base) + 1 :].partition("#")
    relative = posixpath.relpath(path, posixpath.dirname(docname) or ".")
    return relative + (f"#{anchor}" if anchor else "")


def _keep_links_inside(app: Any, doctree: Any, docname: str) -> None:
    from docutils import nodes

    base = pages_url(app.config.html_theme_options.get("repository_url") or None)
    for node in doctree.findall(nodes.reference):
        relative = relative_link(node.get("refuri", ""), docname, base)
        if relative is not None:
            node["refuri"], node["internal"] = relative, True


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("doctree-resolved", _keep_links_inside)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
