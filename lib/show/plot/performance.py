"""Figures of the Performance page, drawn by ``bench/run_all.py`` from the numbers it measured."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.show._common import MIN_FONT, finish_axis, finish_figure, new_figure


def chapter_times(seconds: Mapping[str, float], budget: float) -> Figure:
    """One horizontal bar per chapter: its measured run time against the per-chapter budget (dashed line).

    Args:
        seconds: chapter name -> wall seconds to execute it top to bottom (at least one chapter).
        budget: the most seconds a chapter may take.
    """
    if not seconds:
        raise ValueError("seconds must name at least one chapter, got none")
    if not budget > 0:
        raise ValueError(f"budget must be a positive number of seconds, got {budget!r}")
    names = list(seconds)
    values = np.array([float(seconds[n]) for n in names])
    fig, axes = new_figure(1, 1, width=7.0, height=0.9 + 0.32 * len(names))
    ax: Axes = axes[0, 0]
    y = np.arange(len(names))
    ax.barh(y, values, color=["tab:blue" if v <= budget else "tab:red" for v in values])
    for yi, v in zip(y, values):
        ax.text(v + budget * 0.01, float(yi), f"{v:.0f} s", va="center", fontsize=MIN_FONT)
    ax.axvline(budget, color="black", ls="--", lw=1)
    # the line's label above the axes, clear of the bars (a legend inside would cover one)
    ax.text(budget, 1.01, f"budget {budget:.0f} s", transform=ax.get_xaxis_transform(), ha="center", va="bottom")
    ax.set_yticks(y, names, fontsize=MIN_FONT)
    ax.invert_yaxis()
    ax.set_xlim(0, max(budget, float(values.max())) * 1.15)
    finish_axis(ax, xlabel="seconds to run top to bottom", grid="x")
    fig.suptitle("Chapter run times")
    return finish_figure(fig)


def time_to_phase_change(book: Mapping[str, float], plain: Mapping[str, float]) -> Figure:
    """Chapter 5's set-up against a plain training loop: training steps and wall seconds to the phase change.

    Args:
        book, plain: ``{"steps": ..., "seconds": ...}`` to the phase change for each set-up.
    """
    for name, numbers in (("book", book), ("plain", plain)):
        if set(numbers) != {"steps", "seconds"}:
            raise ValueError(f"{name} must give exactly 'steps' and 'seconds', got {sorted(numbers)}")
    fig, axes = new_figure(2, 1, width=3.6, height=2.8)
    for ax, key, label in zip(axes[0], ("steps", "seconds"), ("training steps", "wall seconds")):
        values = [float(book[key]), float(plain[key])]
        ax.bar([0, 1], values, color=["tab:green", "tab:gray"], width=0.6)
        for x, v in enumerate(values):
            ax.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=MIN_FONT)
        ax.set_xticks([0, 1], ["book's set-up", "plain loop"], fontsize=MIN_FONT)
        ax.set_ylim(0, max(values) * 1.18)
        finish_axis(ax, ylabel=label, title=f"{label} to the phase change", title_size=10, grid="y")
    return finish_figure(fig, title="Chapter 5: time to the phase change", title_size=11)
