"""Figures of chapter 8: in-context learning on natural text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.show._common import MIN_FONT, Array, finish_axis, finish_figure, label_points, new_figure, to_numpy


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
