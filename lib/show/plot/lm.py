"""Figures of out-of-context reasoning in language models (chapter 4): mean ranks per relation pair and over
fine-tuning."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.show._common import (
    MAX_WIDTH,
    MIN_FONT,
    Array,
    band,
    finish_axis,
    legend_below,
    new_figure,
    to_numpy,
)


def ocr_mean_rank(
    runs: Mapping[str, Mapping[str, Array]],
    chance: Mapping[str, float],
    *,
    reference: Mapping[str, Sequence[float]] | None = None,
    reference_title: str = "as reported",
    title: str = "Mean rank of the correct implication, held-out subjects",
) -> Figure:
    """Mean rank per relation pair: a group of bars per pair, one bar per run (e.g. before / after fine-tuning).

    Args:
        runs: run label -> (pair name -> one mean rank per seed). Every run names the same pairs.
        chance: pair name -> mean rank of a random ordering, ``(k - 1) / 2``; drawn as a dashed line.
        reference: optional second panel, e.g. published results: model name -> one mean rank per pair
            (in the order of ``runs``' pairs), drawn on the same scale.
        reference_title: title of the second panel.

    A bar is the mean over seeds, its whisker spans the lowest to the highest seed, dots are single seeds.
    Lower is better; 0 means the correct answer is always ranked first. The reference panel sits below the runs'
    panel, on the same x and y scales (side by side, five groups of bars and their labels would not fit the page
    column); the pair names label the bottom panel's groups, wrapped at their arrow and bracket, and one legend for
    both panels sits below the figure.
    """
    if not runs:
        raise ValueError("runs is empty: nothing to plot")
    pairs = list(next(iter(runs.values())))
    if any(list(r) != pairs for r in runs.values()) or not set(pairs) <= set(chance):
        raise ValueError(f"every run and chance must name the same pairs {pairs}")
    if reference is not None and any(len(v) != len(pairs) for v in reference.values()):
        raise ValueError(f"every reference row needs one value per pair ({len(pairs)})")
    fig, axes = new_figure(
        nrows=1 if reference is None else 2,
        width=MAX_WIDTH,
        height=3.0 if reference is None else 2.6,
        sharex=True,
        sharey=True,
    )
    labels = [p.replace(" -> ", " →\n").replace(" (", "\n(") for p in pairs]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = np.arange(len(pairs))
    ax: Axes = axes[0, 0]
    width = 0.8 / len(runs)
    for j, (label, ranks) in enumerate(runs.items()):
        values = [to_numpy(ranks[p]) for p in pairs]
        means = np.array([v.mean() for v in values])
        low = means - np.array([v.min() for v in values])
        high = np.array([v.max() for v in values]) - means
        offset = x - 0.4 + width * (j + 0.5)
        ax.bar(offset, means, width * 0.9, color=colours[j % len(colours)], label=label, yerr=[low, high], capsize=3)
        for xi, v in zip(offset, values):
            ax.scatter(np.full(len(v), xi), v, s=10, color="black", zorder=3)
    ax.hlines(
        [chance[p] for p in pairs],
        x - 0.45,
        x + 0.45,
        colors="black",
        linestyles="dashed",
        zorder=4,
        label="chance (random order)",
    )
    finish_axis(ax, ylabel="mean rank (0 = best)", title=title, title_size=10)
    if reference is not None:
        ax = axes[1, 0]
        width = 0.8 / len(reference)
        for j, (label, reported) in enumerate(reference.items()):
            ax.bar(
                x - 0.4 + width * (j + 0.5),
                reported,
                width * 0.9,
                color=colours[(j + len(runs)) % len(colours)],
                label=label,
            )
        finish_axis(ax, ylabel="mean rank (0 = best)", title=reference_title, title_size=10)
    axes[-1, 0].set_xticks(x, labels, fontsize=MIN_FONT)
    # one legend below the figure for both panels (a legend inside a panel covered its bars)
    return legend_below(fig, axes.reshape(1, -1), None)


def _colour_of_label(panels: Mapping[str, Mapping[str, Any]], order: Sequence[str] = ()) -> dict[str, str]:
    """One colour per line label across all panels: the labels of ``order`` first, in that order, then the others
    in order of first appearance (two figures given the same ``order`` colour a label alike)."""
    labels = list(dict.fromkeys([*order, *(label for lines in panels.values() for label in lines)]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {label: colours[i % len(colours)] for i, label in enumerate(labels)}


def ocr_rank_curves(
    steps: Array,
    panels: Mapping[str, Mapping[str, Array]],
    chance: float,
    *,
    xlabel: str = "fine-tuning step",
    title: str | None = None,
) -> Figure:
    """Mean rank along training, one panel per question asked (e.g. which rule's answer is ranked).

    Args:
        steps: ``(K,)`` steps at which the ranks were measured.
        panels: panel title -> (line label -> ``(S, K)`` mean ranks of ``S`` seeds). A label keeps its
            colour in every panel.
        chance: mean rank of a random ordering, ``(k - 1) / 2``; drawn as a dashed line in every panel.
        title: figure title (optional).

    A line is the mean over seeds, its band spans the lowest to the highest seed. At most three panels.
    """
    if not panels or len(panels) > 3:
        raise ValueError(f"panels must hold 1 to 3 panels, got {len(panels)}")
    x = to_numpy(steps)
    colour_of = _colour_of_label(panels)
    fig, axes = new_figure(ncols=len(panels), width=4.6, height=3.8, sharey=True)
    for ax, (panel, lines) in zip(axes[0], panels.items()):
        if not lines:
            raise ValueError(f"panel {panel!r} has no lines")
        for label, ranks in lines.items():
            values = to_numpy(ranks)
            if values.ndim != 2 or values.shape[1] != len(x):
                raise ValueError(f"{label!r} in {panel!r}: expected (seeds, {len(x)}) ranks, got {values.shape}")
            band(ax, x, values, colour_of[label], label)
        ax.axhline(chance, color="black", ls="--", lw=1, label="chance (random order)")
        finish_axis(ax, xlabel=xlabel, title=panel, title_size=10)
    axes[0, 0].set_ylabel("held-out mean rank (0 = best)")
    return legend_below(fig, axes, title)


def ocr_interval_curves(
    steps: Array,
    panels: Mapping[str, Mapping[str, Array]],
    *,
    ylabels: Sequence[str],
    references: Sequence[float | None] | None = None,
    xlabel: str = "fine-tuning step",
    xlog: bool = False,
    title: str | None = None,
    colour_order: Sequence[str] = (),
) -> Figure:
    """Means with 95% intervals along training, one panel per measure (at most three).

    Args:
        steps: ``(K,)`` steps.
        panels: panel title -> (line label -> ``(K, 3)`` rows ``[mean, low, high]``). A label keeps its colour.
        ylabels: one y-axis label per panel.
        references: one dashed reference level per panel (chance), or ``None`` for none.
        xlog: a log-scale x axis, ticked at the given ``steps`` (e.g. learning rates).
        colour_order: labels in the order that gives them their colours (the default colour cycle), so that a
            label has the same colour in figures that draw different subsets of the labels; labels not in it
            follow, in order of first appearance.
    """
    if not panels or len(panels) > 3:
        raise ValueError(f"panels must hold 1 to 3 panels, got {len(panels)}")
    if len(ylabels) != len(panels) or (references is not None and len(references) != len(panels)):
        raise ValueError(f"ylabels and references need one entry per panel ({len(panels)})")
    x = to_numpy(steps)
    colour_of = _colour_of_label(panels, colour_order)
    # one panel: the column's width, so that its legend below takes two or three columns, not a panel's height
    single = len(panels) == 1
    fig, axes = new_figure(
        ncols=len(panels), width=MAX_WIDTH if single else 4.6, height=4.2 if single else 3.8, sharex=True
    )  # one x range: a panel whose first points are missing (NaN) still starts where the others do
    for k, (ax, (panel, lines)) in enumerate(zip(axes[0], panels.items())):
        if not lines:
            raise ValueError(f"panel {panel!r} has no lines")
        for label, rows in lines.items():
            v = to_numpy(rows)
            if v.shape != (len(x), 3):
                raise ValueError(f"{label!r} in {panel!r}: expected ({len(x)}, 3) [mean, low, high], got {v.shape}")
            ax.plot(x, v[:, 0], color=colour_of[label], label=label)
            ax.fill_between(x, v[:, 1], v[:, 2], color=colour_of[label], alpha=0.2, lw=0)
        if references is not None and references[k] is not None:
            ax.axhline(references[k], color="black", ls="--", lw=1, label="chance")
        if xlog:
            ax.set_xscale("log")
            ax.set_xticks(x, [f"{v:g}" for v in x])
            ax.minorticks_off()
        finish_axis(ax, xlabel=xlabel, ylabel=ylabels[k], title=panel, title_size=10)
    return legend_below(fig, axes, title)
