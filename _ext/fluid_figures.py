"""Sphinx extension of the book's build: a figure keeps its aspect ratio in a column narrower than the figure.

A chapter's figure is a retina PNG whose output metadata give the size it is shown at, width *and* height
(IPython's ``retina_figure``); myst-nb passes both to the image and the page writes them as
``style="width: 662px; height: 345px"``. The theme caps an image's width at its column (``max-width: 100%``),
so on a phone (a 390-pixel window, a column of about 360) the width shrank and the height did not: figures
squeezed to half their aspect, their text about 5 pt. An image given a width keeps only the width here; its
height follows from the picture's own aspect ratio at any width, and is the same as before where the column is
wide enough. Named in ``_config.yml``.
"""

from __future__ import annotations

from typing import Any


def without_fixed_height(doctree: Any) -> int:
    """Drop the height of every image of ``doctree`` that also has a width (an image scaled with ``:scale:`` keeps
    both: Sphinx computes them from the file); returns how many images changed."""
    from docutils import nodes

    changed = 0
    for image in doctree.findall(nodes.image):
        if "width" in image and "height" in image and "scale" not in image:
            del image["height"]
            changed += 1
    return changed


def _fluid_images(app: Any, doctree: Any, docname: str) -> None:
    without_fixed_height(doctree)


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("doctree-resolved", _fluid_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
