"""Figures of chapter 8: in-context learning on natural text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.show._common import (
    MAX_COLUMNS,
    MAX_WIDTH,
    MIN_FONT,
    Array,
    finish_axis,
    finish_figure,
    label_points,
    legend_below,
    new_figure,
    to_numpy,
)


def loss_by_position_curves(
    curves: Mapping[str, Array], *, early: range, late: range, smooth: int = 8, title: str = ""
) -> Figure:
    """Mean per-token loss against position for several models, the ICL score's two bands shaded.

    Args:
        curves: model name -> ``(seq - 1,)`` mean loss at each position (entry ``p`` predicts token ``p + 1``).
        early, late: the loss positions of the ICL score's two terms (shaded).
        smooth: a running mean over this many positions is drawn over the raw curve (1: raw only).
    """
    if not curves:
        raise ValueError("curves must name at least one model")
    if smooth < 1:
        raise ValueError(f"smooth must be a positive number of positions, got {smooth!r}")
    fig, axes = new_figure(1, 1, width=7.0, height=3.4)
    ax: Axes = axes[0, 0]
    for (start, stop), label in (((early.start, early.stop), "early"), ((late.start, late.stop), "late")):
        ax.axvspan(start + 1, stop, color="gold" if label == "late" else "silver", alpha=0.35, lw=0)
        ax.text(
            (start + stop + 1) / 2,
            0.98,
            label,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="top",
            fontsize=MIN_FONT,
        )
    for name, curve in curves.items():
        v = to_numpy(curve)
        x = np.arange(1, len(v) + 1)
        (line,) = ax.plot(x, v, lw=0.6, alpha=0.35)
        if smooth > 1 and len(v) >= smooth:
            kernel = np.ones(smooth) / smooth
            ax.plot(x[smooth - 1 :], np.convolve(v, kernel, mode="valid"), color=line.get_color(), lw=1.6, label=name)
        else:
            line.set_label(name)
    ax.set_xscale("log")
    finish_axis(
        ax,
        xlabel="position of the predicted token in the window (log scale)",
        ylabel="loss (nats)",
        title=title,
        title_size=10,
        legend=True,
    )
    return finish_figure(fig)


def ablation_by_checkpoint(
    steps: Sequence[int],
    prefix_matching: Array,
    removed: Mapping[str, Array],
    losses: Mapping[str, Array],
    *,
    head: str = "the head",
) -> Figure:
    """A head's ablation at every checkpoint: what it removes against how much the head prefix-matches.

    Args:
        steps: ``(K,)`` checkpoint steps (the first curve's points are labelled with their step where the labels do
            not run into each other).
        prefix_matching: ``(K,)`` the head's prefix-matching score at those steps (the x axis of the left panel).
        removed: ablation name -> ``(K,)`` share of the ICL score it removes (left panel).
        losses: model name (intact and each ablation) -> ``(K,)`` held-out loss (right panel, against the step).
        head: the head's name, for the axis label.
    """
    if not removed or not losses:
        raise ValueError("removed and losses must each name at least one curve")
    x = to_numpy(prefix_matching)
    if len(x) != len(steps) or any(len(to_numpy(v)) != len(steps) for v in (*removed.values(), *losses.values())):
        raise ValueError(f"every curve must have one value per step ({len(steps)})")
    fig, axes = new_figure(2, 1, width=3.5, height=3.2)
    left: Axes = axes[0, 0]
    for name, share in removed.items():
        left.plot(x, to_numpy(share), marker="o", lw=1.4, label=name)
    left.axhline(1.0, color="black", lw=0.6, ls="--")
    left.axhline(0.0, color="black", lw=0.6)
    finish_axis(
        left,
        xlabel=f"prefix matching of {head}",
        ylabel="share of the ICL score removed",
        title="What the removal takes away",
        title_size=10,
        legend=True,
        legend_size=MIN_FONT,
        legend_loc="lower right",
    )
    right: Axes = axes[0, 1]
    for name, loss in losses.items():
        right.plot(list(steps), to_numpy(loss), marker="o", lw=1.4, label=name)
    finish_axis(
        right,
        xlabel="training step",
        ylabel="held-out loss (nats)",
        title="What it costs",
        title_size=10,
        legend=True,
        legend_size=MIN_FONT,
    )
    finish_figure(fig)
    # after the layout, which sets the distances: each step once, beside its first curve's point, where it does
    # not run into another step's label
    label_points(left, x, to_numpy(next(iter(removed.values()))), [f"{step:,}" for step in steps])
    return fig


Estimate: TypeAlias = tuple[float, float, float]
"""``(value, low, high)``: a number and the ends of its interval."""

Reference: TypeAlias = tuple[float, str]
"""``(y, label)``: a horizontal reference line (a threshold, a chance level) and its name in the legend."""

REFERENCE_STYLES = ("--", ":", "-.", (0, (9, 3)))
"""Line styles of a figure's reference lines, in order (all black): at most this many in one figure."""


def _references(
    ax: Axes, references: Sequence[Reference], styles: dict[str, object] | None = None, *, vertical: bool = False
) -> None:
    """Draw ``references`` as thin black lines, each labelled for the legend, in the next of :data:`REFERENCE_STYLES`
    (``styles``: label -> style so far in the figure, shared by its panels so that one style means one line)."""
    styles = {} if styles is None else styles
    for value, label in references:
        if label not in styles and len(styles) == len(REFERENCE_STYLES):
            raise ValueError(f"at most {len(REFERENCE_STYLES)} reference lines a figure, got another: {label!r}")
        ls = styles.setdefault(label, REFERENCE_STYLES[len(styles)])
        line = ax.axvline if vertical else ax.axhline
        line(value, color="black", lw=0.9, ls=ls, label=label)


def estimates_with_intervals(
    groups: Mapping[str, Mapping[str, Estimate]],
    *,
    xlabel: str,
    references: Sequence[Reference] = (),
    title: str = "",
) -> Figure:
    """Numbers with their intervals, one row each (a dot and a bar), in one panel per group, stacked.

    Args:
        groups: panel title (e.g. a model) -> row label (e.g. the heads removed) -> ``(value, low, high)``; at most
            four groups, each with at least one row.
        xlabel: what the numbers are (the shared x axis).
        references: vertical lines drawn in every panel, e.g. ``[(0.0, "none removed"), (1.0, "all removed")]``.
    """
    if not 1 <= len(groups) <= 4 or any(not rows for rows in groups.values()):
        raise ValueError(f"groups must name 1 to 4 groups of at least one row each, got {len(groups)}")
    for rows in groups.values():
        for label, (_value, low, high) in rows.items():
            if not low <= high:
                raise ValueError(f"{label!r}: the interval's low end {low} is above its high end {high}")
    sizes = [len(rows) for rows in groups.values()]
    fig, axes = plt.subplots(
        len(groups),
        1,
        figsize=(MAX_WIDTH, 0.9 + 0.34 * sum(sizes) + 0.55 * len(groups)),
        squeeze=False,
        sharex=True,
        gridspec_kw={"height_ratios": [n + 0.8 for n in sizes]},
    )
    for ax, (name, rows) in zip(axes[:, 0], groups.items()):
        y = np.arange(len(rows))[::-1]
        values = np.array([list(v) for v in rows.values()], dtype=float)
        ax.errorbar(
            values[:, 0],
            y,
            xerr=[values[:, 0] - values[:, 1], values[:, 2] - values[:, 0]],
            fmt="o",
            color="tab:blue",
            ecolor="tab:blue",
            elinewidth=1.6,
            capsize=3,
            label="estimate and 90% interval",
        )
        _references(ax, references, vertical=True)
        ax.set_yticks(y, list(rows), fontsize=MIN_FONT)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        finish_axis(ax, title=name, title_size=MIN_FONT, grid="x")
    axes[-1, 0].set_xlabel(xlabel)
    return legend_below(fig, axes, title or None)


def scores_by_checkpoint(
    steps: Sequence[int],
    panels: Mapping[str, Mapping[str, Array]],
    *,
    ylabels: Sequence[str],
    intervals: Mapping[str, Mapping[str, Array]] | None = None,
    references: Mapping[str, Sequence[Reference]] | None = None,
    even: bool = False,
    styles: Mapping[str, tuple[str, str]] | None = None,
    title: str = "",
) -> Figure:
    """A few measurements at each checkpoint: one line with markers per measurement, one panel per group of them
    (side by side, at most three), one legend below.

    Args:
        steps: ``(K,)`` checkpoint steps (the x axis of every panel).
        panels: panel title -> measurement name -> ``(K,)`` values.
        ylabels: one y-axis label per panel.
        intervals: panel title -> measurement name -> ``(2, K)`` low and high ends, drawn as error bars.
        references: panel title -> horizontal lines (a threshold, a chance level) for that panel.
        even: place the checkpoints evenly along the x axis, each labelled with its step (for checkpoints that
            crowd together around a phase change), instead of at their steps.
        styles: measurement name -> ``(colour, line style)``, e.g. one colour for two measurements of one
            ablation, solid and dashed (default: the next colour of the cycle, solid).
    """
    if not 1 <= len(panels) <= MAX_COLUMNS or any(not curves for curves in panels.values()):
        raise ValueError(f"panels must name 1 to {MAX_COLUMNS} panels of at least one curve each, got {len(panels)}")
    if len(ylabels) != len(panels):
        raise ValueError(f"ylabels must give one label per panel ({len(panels)}), got {len(ylabels)}")
    x = np.arange(len(steps), dtype=float) if even else np.asarray(steps, dtype=float)
    intervals, references = intervals or {}, references or {}
    labels = {label for curves in panels.values() for label in curves}
    entries = len(labels) + sum(len(lines) for lines in references.values())
    # room for the panels and for the legend below them (about two entries a row)
    fig, axes = new_figure(len(panels), 1, width=MAX_WIDTH / len(panels), height=2.4 + 0.28 * -(-entries // 2))
    markers = iter(["o", "s", "^", "D", "v", "P", "X"])
    colours = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    marker: dict[str, tuple[str, str]] = {}  # one marker and colour per measurement, in every panel
    line_styles: dict[str, object] = {}
    for ax, (name, curves), ylabel in zip(axes[0], panels.items(), ylabels):
        for label, curve in curves.items():
            v = to_numpy(curve)
            if v.shape != x.shape:
                raise ValueError(f"{label!r} must have one value per step ({len(x)}), got shape {v.shape}")
            m, colour = marker.setdefault(label, (next(markers, "o"), next(colours, "black")))
            colour, ls = (styles or {}).get(label, (colour, "-"))
            band = intervals.get(name, {}).get(label)
            if band is None:
                ax.plot(x, v, marker=m, color=colour, ls=ls, lw=1.5, label=label)
            else:
                ends = to_numpy(band)
                if ends.shape != (2, len(x)):
                    raise ValueError(f"{label!r}: intervals must be (2, {len(x)}) low and high ends, got {ends.shape}")
                yerr = [v - ends[0], ends[1] - v]
                ax.errorbar(x, v, yerr=yerr, marker=m, color=colour, ls=ls, lw=1.5, capsize=3, label=label)
        _references(ax, references.get(name, ()), line_styles)
        if even:
            ax.set_xticks(x, [f"{step:,}" for step in steps], fontsize=MIN_FONT)
            ax.set_xlim(-0.4, len(x) - 0.6)
        finish_axis(ax, xlabel="training step", ylabel=ylabel, title=name, title_size=MIN_FONT, grid="y")
    return legend_below(fig, axes, title or None)


def bars_by_group(
    groups: Mapping[str, Mapping[str, float]],
    *,
    ylabel: str,
    xlabel: str = "",
    references: Sequence[Reference] = (),
    title: str = "",
) -> Figure:
    """Grouped bars: one group of bars per key of ``groups`` along the x axis, one bar (and colour) per series.

    Args:
        groups: group name (an x tick) -> series name -> value; every group names the same series, at most four.
        references: horizontal lines, e.g. a chance level.
    """
    if not groups:
        raise ValueError("groups must name at least one group")
    series = list(next(iter(groups.values())))
    if not 1 <= len(series) <= 4 or any(list(g) != series for g in groups.values()):
        raise ValueError(f"every group must name the same 1 to 4 series, in the same order; got {series}")
    # a group needs about 1.3 inches; a few groups make a narrower figure, not wider bars
    fig, axes = new_figure(1, 1, width=min(MAX_WIDTH, 2.4 + 1.3 * len(groups)), height=2.8)
    ax: Axes = axes[0, 0]
    width = 0.8 / len(series)
    x = np.arange(len(groups))
    for i, name in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, [g[name] for g in groups.values()], width, label=name)
    _references(ax, references)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(x, list(groups), fontsize=MIN_FONT)
    finish_axis(ax, xlabel=xlabel, ylabel=ylabel, grid="y")
    return legend_below(fig, axes, title or None)


def curves_against(
    curves: Mapping[str, tuple[Array, Array]],
    *,
    xlabel: str,
    ylabel: str,
    references: Sequence[Reference] = (),
    title: str = "",
) -> Figure:
    """Several curves in one panel, each with its own x values (e.g. runs of different lengths against the passes
    over their training data), one legend below.

    Args:
        curves: name -> ``(x, y)``, two ``(n,)`` arrays (``n`` may differ between curves).
        references: horizontal lines, e.g. a threshold.
    """
    if not curves:
        raise ValueError("curves must name at least one curve")
    fig, axes = new_figure(1, 1, width=MAX_WIDTH, height=3.0)
    ax: Axes = axes[0, 0]
    for name, (x, y) in curves.items():
        xs, ys = to_numpy(x), to_numpy(y)
        if xs.shape != ys.shape or xs.ndim != 1:
            raise ValueError(f"{name!r}: x and y must be two 1-D arrays of one length, got {xs.shape} and {ys.shape}")
        ax.plot(xs, ys, lw=1.6, label=name)
    _references(ax, references)
    finish_axis(ax, xlabel=xlabel, ylabel=ylabel, grid="y")
    return legend_below(fig, axes, title or None)
