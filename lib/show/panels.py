"""How many panels a figure shows, and how many its caption says it shows: the check that the two agree.

Every figure a notebook shows is saved as a PNG that records its number of panels (:func:`visible_panels`) in a
text chunk named :data:`PNG_KEY` (:func:`lib.show._common.sharp_notebook_figures`), and the built-book tests compare
it with the count its caption states (:func:`stated_panels`).

The captions' convention, which makes the check reliable: a caption that counts panels counts **all** of them,
as "six panels, two rows of three" or "both panels" (a count per row or per model is written without the word
"panels" after it: "two rows of three"). A count tied to a part of the figure ("the two panels of a row", "each
model's four panels", "one panel per layer") is not a total and is not checked; neither are "left" and "right",
nor counts of lines, signatures or heads.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from PIL import Image

PNG_KEY = "Panels"
"""Name of the PNG text chunk that holds a saved figure's number of panels."""

NUMBERS = {
    word: n for n, word in enumerate("one two three four five six seven eight nine ten eleven twelve".split(), start=1)
} | {"both": 2}
"""Number words a caption may count panels with."""

_COUNT = re.compile(
    r"(?P<before>(?:\beach\s+\S+\s+)?)\b(?P<n>" + "|".join(NUMBERS) + r"|\d+)\s+panels?\b(?P<after>[^.;:]{0,20})",
    re.IGNORECASE,
)
_PART = re.compile(r"^\s*(?:of\s+(?:a|each|one|the)\b|a\s+row|per\b|in\s+each\b|for\s+each\b|each\b)", re.IGNORECASE)


def _has_content(ax: Axes) -> bool:
    """Whether ``ax`` is drawn as a panel: visible, and with its axis lines and ticks on or data or text in it."""
    return ax.get_visible() and (
        ax.axison or ax.has_data() or any(t.get_visible() and t.get_text().strip() for t in ax.texts)
    )


def visible_panels(fig: Figure) -> int:
    """Number of panels ``fig`` shows: its axes (subfigures' included) that draw something, not counting colour
    bars, and axes drawn over the same area as another (a twin with a second y-axis) counted once."""
    areas = {
        tuple(round(v, 3) for v in ax.get_position().bounds)
        for ax in fig.axes
        if _has_content(ax) and getattr(ax, "_colorbar", None) is None
    }
    return len(areas)


def stated_panels(caption: str) -> int | None:
    """The number of panels ``caption`` says its figure has ("four panels", "both panels"), or None where it states
    no total (no count, or only counts of a part of the figure: "the two panels of a row", "each model's four
    panels"). Raises ``ValueError`` when it states two different totals."""
    totals = {
        NUMBERS.get(m["n"].lower()) or int(m["n"])
        for m in _COUNT.finditer(caption)
        if not m["before"] and not _PART.match(m["after"])
    }
    if len(totals) > 1:
        raise ValueError(f"the caption states {sorted(totals)} panels: state one total ({caption[:80]!r})")
    return totals.pop() if totals else None


def saved_panels(png: bytes | str | Path) -> int | None:
    """The number of panels a saved PNG records under :data:`PNG_KEY`, or None if none: its bytes, its file, or
    its base64 text (as a notebook's ``image/png`` output holds it)."""
    if isinstance(png, Path):
        data = png.read_bytes()
    else:
        data = base64.b64decode(png) if isinstance(png, str) else png
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        value = getattr(image, "text", {}).get(PNG_KEY)
    return None if value is None else int(value)
