"""Text that runs into other text: the check every figure of the book passes when it is drawn.

A label drawn over another (crowded tick labels, a title over a panel title, numbers in heatmap cells that run
together) is unreadable on the page. :func:`overlapping_texts` draws a figure and returns every pair of texts whose
drawn boxes overlap; :func:`report_overlaps` names them under the figure when the check is switched on
(``CIRCUITS_FIGURE_CHECK=1``, set by ``make test``, ``make book`` and ``make seeds``; every figure a notebook shows
passes through it, :func:`lib.show._common.sharp_notebook_figures`), and the built-book tests fail on a page that
shows such a line. A rotated text is its rotated rectangle, not the upright box around it.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator

import numpy as np
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.text import Text

CHECK_ENV = "CIRCUITS_FIGURE_CHECK"
"""Set to ``1`` to make :func:`check_figure` raise on overlapping text."""

TOLERANCE_PX = 1.5
"""Texts whose rectangles overlap by less than this many pixels (at the figure's dpi) in depth do not count: a
glyph's box includes room for accents and descenders that touch the next line's box without touching its glyphs."""


@contextlib.contextmanager
def _recording_drawn_text() -> Iterator[list[Text]]:
    """While open, every non-empty text the figure draws is appended to the yielded list (what is drawn, not every
    Text object: tick labels out of view and hidden templates are never drawn)."""
    drawn: list[Text] = []
    original = Text.draw

    def draw(self: Text, renderer: RendererBase) -> None:
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    Text.draw = draw  # type: ignore[method-assign, assignment]
    try:
        yield drawn
    finally:
        Text.draw = original  # type: ignore[method-assign]


def _rectangle(text: Text, renderer: RendererBase) -> np.ndarray:
    """The four corners ``(4, 2)`` in pixels of ``text`` as drawn: its upright box turned by its rotation about the
    centre of the box it spans (which a rotation leaves in place)."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    if angle % 180 == 0:
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    text.set_rotation(0)
    upright = text.get_window_extent(renderer)
    text.set_rotation(angle)
    w, h = upright.width / 2, upright.height / 2
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) @ np.array([[c, s], [-s, c]])
    return corners + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _depth(a: np.ndarray, b: np.ndarray) -> float:
    """How far two convex polygons ``(k, 2)`` overlap: the smallest overlap of their projections on the edge
    normals of both (separating axes); <= 0 when they do not overlap."""
    depth = math.inf
    for polygon in (a, b):
        for edge in np.diff(np.vstack([polygon, polygon[:1]]), axis=0):
            normal = np.array([-edge[1], edge[0]])
            norm = np.linalg.norm(normal)
            if norm == 0:
                continue
            pa, pb = a @ normal / norm, b @ normal / norm
            depth = min(depth, min(pa.max(), pb.max()) - max(pa.min(), pb.min()))
    return depth


def overlapping_texts(fig: Figure) -> list[tuple[str, str]]:
    """Draw ``fig`` and return the pairs ``(text, text)`` of drawn texts that overlap by more than
    :data:`TOLERANCE_PX` (in the order drawn)."""
    with _recording_drawn_text() as drawn:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    shapes = [_rectangle(t, renderer) for t in drawn]
    return [
        (drawn[i].get_text(), drawn[j].get_text())
        for i in range(len(drawn))
        for j in range(i + 1, len(drawn))
        if _depth(shapes[i], shapes[j]) > TOLERANCE_PX * fig.dpi / 100
    ]


MARK = "FIGURE CHECK:"
"""Starts the line :func:`report_overlaps` writes; the built-book tests fail on any page that shows it."""


def report_overlaps(fig: Figure) -> None:
    """When :data:`CHECK_ENV` is ``1``, write a :data:`MARK` line to stderr naming the overlapping texts of ``fig``
    (stderr: a notebook shows it under the figure, where the built-book tests find it; a display formatter cannot
    fail the cell that draws)."""
    if os.environ.get(CHECK_ENV) != "1":
        return
    pairs = overlapping_texts(fig)
    if pairs:
        shown = "; ".join(f"{a!r} over {b!r}" for a, b in pairs[:8])
        print(f"{MARK} {len(pairs)} pairs of texts overlap in this figure: {shown}", file=sys.stderr)
