"""Helpers shared by every figure module: conversion to NumPy, figure and axes set-up, the finishing touches."""

from __future__ import annotations

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

from lib.core import validate

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
    """The last step of every figure: an optional overall title, then the layout (``tight_layout``)."""
    if title:
        text = fig.suptitle(title)
        if title_size is not None:
            text.set_fontsize(title_size)
    if tight:
        fig.tight_layout()
    return fig


def legend_below(fig: Figure, axes: np.ndarray, title: str | None) -> Figure:
    """One legend for all panels of the first row, below the figure (a legend inside a panel covers its data; a
    label has one colour in every panel), then the figure's title and the layout. Returns ``fig``."""
    handles: dict[str, Artist] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    ncol = min(3, len(handles))
    rows = -(-len(handles) // ncol)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=MIN_FONT, frameon=False)
    finish_figure(fig, title=title or "", title_size=11, tight=False)
    row_inches = 1.5 * MIN_FONT / 72  # one legend row: its text and the gap to the next
    fig.tight_layout(rect=(0, (0.12 + row_inches * rows) / fig.get_figheight(), 1, 1))
    return fig


def signed_heatmap(
    ax: Axes, values: Array, *, title: str = "", xlabel: str = "", ylabel: str = "", colorbar: bool = True
) -> AxesImage:
    """Draw a 2-D array with a red/blue map centred at zero; returns the image."""
    v = to_numpy(values)
    bound = float(np.abs(v).max()) or 1.0
    im = ax.imshow(v, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto", interpolation="nearest")
    finish_axis(ax, xlabel=xlabel, ylabel=ylabel, title=title)
    if colorbar:
        figure_of(ax).colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


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
