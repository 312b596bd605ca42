"""Figures of the model family (chapter 10): curves of many runs over training, onsets against size and batch, and
every head's score of a larger model as a grid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from lib.show._common import (
    MIN_FONT,
    Array,
    colorbar_beside,
    finish_axis,
    finish_figure,
    legend_below,
    new_figure,
    to_numpy,
)

COLOURS = ("tab:red", "tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:olive", "tab:cyan")

Run = tuple[Array, Array]
"""``(steps (K,), values (K,))``: one run's curve."""


def family_curves(
    panels: Mapping[str, Mapping[str, Sequence[Run]]],
    *,
    ylabels: Sequence[str],
    levels: Mapping[str, float] | None = None,
    title: str = "",
    xlabel: str = "training step",
) -> Figure:
    """Curves of many runs over training: one panel per quantity, one colour per group (e.g. a model size), one
    line per run (seed) of the group.

    Args:
        panels: panel title -> group label -> the group's runs ``[(x, values), ...]`` (``x``: steps, or what
            ``xlabel`` names); every panel has the same groups.
        ylabels: one per panel.
        levels: panel title -> a level to draw as a dashed line (e.g. the 1-nat phase-change level).
        title: the figure's title.

    One legend for all panels, below them.
    """
    groups = [list(groups) for groups in panels.values()]
    if not panels or any(g != groups[0] for g in groups) or not groups[0]:
        raise ValueError("panels must be non-empty and have the same, non-empty groups in every panel")
    if len(ylabels) != len(panels):
        raise ValueError(f"need one y label per panel: {len(panels)} panels, {len(ylabels)} labels")
    if len(groups[0]) > len(COLOURS):
        raise ValueError(f"at most {len(COLOURS)} groups, got {len(groups[0])}")
    fig, axes = new_figure(len(panels), 1, width=3.6, height=5.4)
    for ax, (name, by_group), ylabel in zip(axes[0], panels.items(), ylabels):
        for (label, runs), colour in zip(by_group.items(), COLOURS):
            for i, (steps, values) in enumerate(runs):
                ax.plot(
                    to_numpy(steps), to_numpy(values), color=colour, lw=1.2, alpha=0.8, label=label if i == 0 else None
                )
        if levels is not None and name in levels:
            ax.axhline(levels[name], color="black", lw=0.8, ls="--")
        finish_axis(ax, xlabel=xlabel, ylabel=ylabel, title=name, title_size=10)
    return legend_below(fig, axes, title)


def onsets_against(
    panels: Mapping[str, Mapping[str, tuple[Array, Array]]],
    *,
    xlabels: Sequence[str],
    ylabels: Sequence[str],
    references: Mapping[str, tuple[Array, Array, str]] | None = None,
    title: str = "",
) -> Figure:
    """Phase-change onsets against a property of the run (parameters, B x C), on log-log axes: one panel per
    comparison, one colour per group of runs, one point per run.

    Args:
        panels: panel title -> group label -> ``(x (n,), onset (n,))`` of the group's runs (positive values).
        xlabels, ylabels: one per panel.
        references: panel title -> ``(x, y, label)``, a reference curve drawn dashed (e.g. a law's prediction).
        title: the figure's title.

    One legend for all panels, below them.
    """
    if not panels:
        raise ValueError("need at least one panel")
    if len(xlabels) != len(panels) or len(ylabels) != len(panels):
        raise ValueError(f"need one x and one y label per panel: {len(panels)} panels")
    fig, axes = new_figure(len(panels), 1, width=3.6, height=3.8)
    labels = list(dict.fromkeys(label for groups in panels.values() for label in groups))
    if len(labels) > len(COLOURS):
        raise ValueError(f"at most {len(COLOURS)} groups, got {len(labels)}")
    colour_of = dict(zip(labels, COLOURS))
    for ax, (name, groups), xlabel, ylabel in zip(axes[0], panels.items(), xlabels, ylabels):
        _draw_onsets(ax, groups, colour_of)
        if references is not None and name in references:
            x, y, label = references[name]
            ax.plot(to_numpy(x), to_numpy(y), color="black", lw=1.0, ls="--", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(FuncFormatter(_compact))
            axis.set_minor_formatter(NullFormatter())
        finish_axis(ax, xlabel=xlabel, ylabel=ylabel, title=name, title_size=10)
    return legend_below(fig, axes, title)


def _draw_onsets(ax: Axes, groups: Mapping[str, tuple[Array, Array]], colour_of: Mapping[str, str]) -> None:
    """Each group's points."""
    for label, (x, y) in groups.items():
        xs, ys = to_numpy(x).astype(float), to_numpy(y).astype(float)
        if xs.shape != ys.shape or xs.size == 0 or min(xs.min(), ys.min()) <= 0:
            raise ValueError(f"{label}: need matching, non-empty, positive x and onsets, got {xs!r} and {ys!r}")
        ax.scatter(xs, ys, color=colour_of[label], s=22, alpha=0.8, label=label, zorder=3)


def _compact(value: float, _position: object = None) -> str:
    """A log axis' tick label: 300, 2k, 50k, 1M, 20M."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def head_score_grids(grids: Mapping[str, Array], *, threshold: float, title: str = "") -> Figure:
    """One score of every head of one or more models, each a ``(layers, heads)`` grid on one colour scale, 0 to 1;
    the heads at or above ``threshold`` are outlined in red.

    Args:
        grids: panel title -> ``(n_layers, n_heads)`` scores in ``[0, 1]`` (e.g. prefix matching); at most three.
        threshold: the level a head is marked at (e.g. the induction threshold).
        title: the figure's title.
    """
    if not 1 <= len(grids) <= 3:
        raise ValueError(f"give 1 to 3 grids, got {len(grids)}")
    values = {name: to_numpy(g) for name, g in grids.items()}
    if any(v.ndim != 2 for v in values.values()):
        raise ValueError(f"every grid must be (layers, heads), got shapes {[v.shape for v in values.values()]}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    fig, axes = new_figure(len(values), 1, width=3.3, height=3.4)
    image = None
    for k, (ax, (name, v)) in enumerate(zip(axes[0], values.items())):
        image = ax.imshow(v, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        for layer, head in zip(*np.nonzero(v >= threshold)):
            ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.5))
        ax.set_xticks(range(0, v.shape[1], 2))
        ax.set_yticks(range(0, v.shape[0], 2))
        ax.tick_params(labelsize=MIN_FONT)
        finish_axis(ax, xlabel="head", ylabel="layer" if k == 0 else None, title=name, title_size=10)
    assert image is not None
    colorbar_beside(axes[0, -1], image)
    return finish_figure(fig, title=title, title_size=11)
