"""Helpers shared by every figure module: conversion to NumPy, figure and axes set-up, the finishing touches."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, TypeAlias

import matplotlib.pyplot as plt
import numpy as np
import numpy.typing as npt
import torch
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.text import Text

from lib.core import validate
from lib.show import panels, text_overlap

Array: TypeAlias = torch.Tensor | npt.ArrayLike
"""Numbers a figure accepts: a tensor (any device, any float or int dtype), an array or a (nested) list."""

Window: TypeAlias = tuple[float, float]
"""``(start, end)`` training steps of the phase change."""

LegendLoc: TypeAlias = Literal["best", "upper right", "upper left", "lower left", "lower right"]
"""Where a legend goes (None = matplotlib's default, ``"best"``)."""

COLUMN_PX = 690
"""Width of the book's page column in pixels: a wider figure is shown scaled down to it."""

MAX_COLUMNS = 3
"""At most this many panels side by side: more would be too small to read in the page column."""

MAX_WIDTH = 6.9
"""Widest figure :func:`new_figure` makes, in inches: :data:`COLUMN_PX` at matplotlib's 100 dpi, so that a figure is
shown at its own size, never scaled down, and its text keeps the size it was set in."""

MIN_FONT = 10.0
"""Smallest font size (points) any figure uses: 14 px on the page (at 100 dpi, unscaled), beside the 16-px text."""

ICL_SCORE_LABEL = "ICL score (nats; < 0 = learns in context)"
"""y-label of every plot of the in-context-learning score."""


def sharp_notebook_figures() -> None:
    """In a notebook (an IPython kernel), show figures as PNGs of twice their pixels at their own size ("retina"):
    sharp on high-resolution screens, the same size on the page; check each for overlapping text as it is shown
    (:func:`lib.show.text_overlap.report_overlaps`); and record its number of panels in the PNG
    (:data:`lib.show.panels.PNG_KEY`), for the check of its caption. Does nothing outside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("retina")
    formatter = shell.display_formatter.formatters["image/png"]
    draw_png = formatter.lookup_by_type(Figure)

    def checked_png(fig: Figure, *args, **kwargs):  # type: ignore[no-untyped-def]
        text_overlap.report_overlaps(fig)
        metadata = {panels.PNG_KEY: str(panels.visible_panels(fig))}
        return draw_png(fig, *args, metadata=metadata, **kwargs)

    formatter.for_type(Figure, checked_png)


def to_numpy(x: Array) -> np.ndarray:
    """A CPU float NumPy array from a tensor, array or list."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def new_figure(
    ncols: int = 1,
    nrows: int = 1,
    width: float = 5.0,
    height: float = 3.6,
    *,
    sharex: bool = False,
    sharey: bool = False,
) -> tuple[Figure, np.ndarray]:
    """A figure with a grid of axes (always returned as a 2-D array ``(nrows, ncols)``), sized per panel.

    At most :data:`MAX_COLUMNS` panels a row; when ``ncols * width`` exceeds :data:`MAX_WIDTH` the panels shrink
    (width and height alike) so that the figure fits the page column at a readable scale.
    """
    validate.int_at_least("ncols", ncols, 1)
    if ncols > MAX_COLUMNS:
        raise ValueError(f"ncols must be at most {MAX_COLUMNS} (panels a row in the page column), got {ncols}")
    shrink = min(1.0, MAX_WIDTH / (width * ncols))
    width, height = width * shrink, height * shrink
    return plt.subplots(
        nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, sharex=sharex, sharey=sharey
    )


def figure_of(ax: Axes) -> Figure:
    """The (top-level) figure that holds ``ax``, also when ``ax`` sits in a subfigure."""
    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


def finish_axis(
    ax: Axes,
    *,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    title_size: float | None = None,
    label_size: float | None = None,
    legend: bool = False,
    legend_size: float = MIN_FONT,
    legend_loc: LegendLoc | None = None,
    grid: Literal["x", "y", "both"] | None = None,
) -> None:
    """Axis labels, title, legend and grid of one panel; a size of None keeps matplotlib's default for that text
    (passing ``fontsize=None`` would not: it means the body size, and titles are larger by default).

    Call it after drawing: the legend collects the labelled artists drawn so far.
    """
    texts = []
    if xlabel is not None:
        texts.append((ax.set_xlabel(xlabel), label_size))
    if ylabel is not None:
        texts.append((ax.set_ylabel(ylabel), label_size))
    if title is not None:
        texts.append((ax.set_title(title), title_size))
    for text, size in texts:
        if size is not None:
            text.set_fontsize(size)
    if legend:
        ax.legend(fontsize=legend_size, loc=legend_loc)
    if grid is not None:
        ax.grid(axis=grid, alpha=0.3)


def finish_figure(fig: Figure, *, title: str = "", title_size: float | None = None, tight: bool = True) -> Figure:
    """The last step of every figure: an optional overall title, then the layout (``tight_layout``, or the figure's
    own with ``tight=False``), then :func:`fit_column`."""
    text = fig.suptitle(title) if title else None
    if text is not None and title_size is not None:
        text.set_fontsize(title_size)
    # tight=False: the figure's own layout engine (a constrained layout) runs when the figure is drawn
    fit_column(
        fig,
        (lambda: fig.tight_layout(rect=(0, 0, 1, below_title(fig, text)))) if tight else fig.draw_without_rendering,
        text,
    )
    return fig


def below_title(fig: Figure, title: Text | None) -> float:
    """The top of the panels' area, as a fraction of the figure's height: below the overall ``title`` (as wrapped
    now) and a small gap, or the figure's top without one (``tight_layout`` alone let panel titles run into it)."""
    if title is None:
        return 1.0
    gap = 0.3 * float(title.get_fontsize()) / 72 * fig.dpi
    return title.get_position()[1] - (title.get_window_extent().height + gap) / fig.bbox.height  # its top's y


SAVE_PAD = 0.1
"""Inches the inline backend pads a figure's drawn content with when it saves it (``bbox_inches="tight"``)."""


def saved_width(fig: Figure) -> float:
    """Width in inches of the PNG the inline backend saves: the drawn content (titles, legends and labels that
    stick out of the figure included) plus :data:`SAVE_PAD` on each side."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return fig.get_tightbbox(renderer).width + 2 * SAVE_PAD


def wrap_to_width(text: Text, width_px: float) -> bool:
    """Break ``text`` at spaces into the fewest lines, of balanced length, that make it at most ``width_px`` wide
    as drawn (a word longer than that stays whole); whether it was wider."""
    if text.get_window_extent().width <= width_px:
        return False
    words = " ".join(text.get_text().split())
    for lines in range(2, len(words.split()) + 1):
        chars = -(-len(words) // lines)
        while len(wrapped := textwrap.wrap(words, chars, break_long_words=False)) > lines:
            chars += 1
        text.set_text("\n".join(wrapped))
        if text.get_window_extent().width <= width_px:
            break
    return True


def title_room(ax: Axes) -> float:
    """Pixels a centred title of ``ax`` may span: up to the nearest other axes beside it (same row) or the figure's
    edge, whichever is closer, on both sides alike."""
    fig = figure_of(ax)
    box = ax.get_window_extent()
    left, right = SAVE_PAD * fig.dpi, fig.bbox.width - SAVE_PAD * fig.dpi
    for other in fig.axes:
        b = other.get_window_extent()
        if other is ax or not (b.y0 < box.y1 and box.y0 < b.y1):
            continue
        if b.x1 <= box.x0:
            left = max(left, b.x1)
        elif b.x0 >= box.x1:
            right = min(right, b.x0)
    centre = (box.x0 + box.x1) / 2
    return 2 * max(min(centre - left, right - centre), 0.0)


def fit_column(fig: Figure, layout: Callable[[], object], title: Text | None = None) -> None:
    """Make ``fig`` fit the page column as saved (:func:`saved_width` at most :data:`MAX_WIDTH`), its text at the
    size it was set in: each panel title wrapped to :func:`title_room` and the overall ``title`` to the figure,
    ``layout()``, and once more if the layout left a title too wide; then the figure narrowed by what still sticks
    out (a long tick label or legend) and laid out anew. ``layout()`` runs again only where something changed: a
    legend anchored to a panel moves with it, so a second run can lay out differently."""
    wrap_titles(fig, title)
    layout()
    if wrap_titles(fig, title):
        layout()
    for _ in range(3):
        excess = saved_width(fig) - MAX_WIDTH
        if excess <= 0.005:
            return
        width, height = fig.get_size_inches()
        fig.set_size_inches(width - excess, height)
        layout()


def wrap_titles(fig: Figure, title: Text | None) -> bool:
    """Wrap each panel title of ``fig`` to its :func:`title_room` and ``title`` to the figure's width; whether any
    had to be."""
    wrapped = [wrap_to_width(ax.title, title_room(ax)) for ax in fig.axes if ax.get_title()]
    if title is not None:
        wrapped.append(wrap_to_width(title, fig.bbox.width - 2 * SAVE_PAD * fig.dpi))
    return any(wrapped)


def legend_below(fig: Figure, axes: np.ndarray, title: str | None) -> Figure:
    """One legend for all panels of the first row, below the figure (a legend inside a panel covers its data; a
    label has one colour in every panel), in as many columns (at most three) as fit the figure's width, then the
    figure's title and the layout. Returns ``fig``."""
    handles: dict[str, Artist] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for ncol in range(min(3, len(handles)), 0, -1):
        legend = fig.legend(
            list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=MIN_FONT, frameon=False
        )
        if ncol == 1 or legend.get_window_extent(renderer).width <= fig.bbox.width - 2 * SAVE_PAD * fig.dpi:
            break
        legend.remove()
    rows = -(-len(handles) // ncol)
    legend_inches = 0.12 + 1.5 * MIN_FONT / 72 * rows  # each legend row: its text and the gap to the next
    text = fig.suptitle(title, fontsize=11) if title else None
    fit_column(
        fig, lambda: fig.tight_layout(rect=(0, legend_inches / fig.get_figheight(), 1, below_title(fig, text))), text
    )
    return fig


def symmetric_bound(arrays: Iterable[Array]) -> float:
    """The largest ``|value|`` over ``arrays`` (1.0 when all are zero): a red/blue scale centred at zero that they
    share runs from ``-bound`` to ``bound``."""
    return max(float(np.abs(to_numpy(a)).max()) for a in arrays) or 1.0


def signed_heatmap(
    ax: Axes,
    values: Array,
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    colorbar: bool = True,
    bound: float | None = None,
) -> AxesImage:
    """Draw a 2-D array with a red/blue map centred at zero, from ``-bound`` to ``bound`` (default: the array's
    largest ``|value|``; pass one bound to panels that are compared by colour); returns the image."""
    v = to_numpy(values)
    bound = bound or symmetric_bound([v])
    im = ax.imshow(v, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto", interpolation="nearest")
    finish_axis(ax, xlabel=xlabel, ylabel=ylabel, title=title)
    if colorbar:
        figure_of(ax).colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def colorbar_beside(ax: Axes, image: AxesImage) -> None:
    """A colour bar for ``image`` just right of ``ax``, outside it: ``ax`` keeps the width of the other panels of
    its row (``Figure.colorbar(ax=...)`` would take the room from ``ax`` alone), and ``tight_layout`` makes room."""
    cax = ax.inset_axes((1.03, 0.0, 0.045, 1.0))
    figure_of(ax).colorbar(image, cax=cax).ax.tick_params(labelsize=MIN_FONT)


def band(ax: Axes, x: np.ndarray, values: Array, colour: str | None, label: str, ls: str = "-") -> None:
    """Mean line with a min-max band over the first axis (seeds) of ``values (S, K)``."""
    v = to_numpy(values)
    ax.plot(x, v.mean(0), color=colour, ls=ls, label=label)
    if v.shape[0] > 1:
        ax.fill_between(x, v.min(0), v.max(0), color=colour, alpha=0.2, lw=0)


def shade_window(ax: Axes, window: Window | None, label: str = "phase change") -> None:
    """Shade the phase-change window ``(start, end)`` in gold; nothing when ``window`` is None."""
    if window is not None:
        ax.axvspan(window[0], window[1], color="gold", alpha=0.3, label=label)


def step_edges(steps: np.ndarray, *, extend: bool) -> np.ndarray:
    """``(n + 1,)`` cell edges around ``(n,)`` increasing steps, halfway between neighbours.

    The outer edges extend half a gap beyond the first and last step when ``extend``, else sit on them.
    """
    middle = (steps[1:] + steps[:-1]) / 2
    if not extend:
        return np.concatenate([[steps[0]], middle, [steps[-1]]])
    return np.concatenate([[steps[0] - (steps[1] - steps[0]) / 2], middle, [steps[-1] + (steps[-1] - steps[-2]) / 2]])


def label_points(ax: Axes, x: Array, y: Array, labels: Sequence[str]) -> int:
    """Write ``labels[i]`` beside the point ``(x[i], y[i])`` of ``ax`` (above it, on the side towards the middle of
    the panel), skipping a label that would run into any text already there (another label, the legend, a title:
    points close together); call it after the layout. Returns how many were written."""
    fig = figure_of(ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    taken = [t.get_window_extent(renderer) for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    taken += [legend.get_window_extent(renderer) for legend in [ax.get_legend()] if legend is not None]
    middle = sum(ax.get_xlim()) / 2
    written = 0
    for xi, yi, label in zip(to_numpy(x), to_numpy(y), labels):
        right = xi <= middle
        text = ax.annotate(
            label,
            (xi, yi),
            textcoords="offset points",
            xytext=(4 if right else -4, 4),
            ha="left" if right else "right",
            fontsize=MIN_FONT,
        )
        box = text.get_window_extent(renderer)
        if any(box.overlaps(other) for other in taken):
            text.remove()
        else:
            taken.append(box)
            written += 1
    return written
