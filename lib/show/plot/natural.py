"""Figures of chapter 8: in-context learning on natural text."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.show._common import Array, finish_axis, finish_figure, new_figure, to_numpy


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
            (start + stop + 1) / 2, 0.98, label, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8
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
