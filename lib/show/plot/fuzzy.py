"""Figures of fuzzy induction (chapter 9): losses on exact and translated repeats over training, and every head's
same- and cross-language scores."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.show._common import (
    MIN_FONT,
    Array,
    Window,
    finish_axis,
    legend_below,
    new_figure,
    shade_window,
    to_numpy,
)


def fuzzy_loss_curves(
    steps: Array,
    exact: Array,
    translated: Array,
    *,
    window: Window | None = None,
    controls: Mapping[str, Array] | None = None,
    other_seeds: Mapping[str, Array] | None = None,
    chance: float | None = None,
) -> Figure:
    """Loss on exact and on translated repeats over training.

    Args:
        steps: ``(n,)`` checkpoint steps. exact, translated: ``(n,)`` the model's mean losses (nats).
        window: ``(start, end)`` steps of the phase change on translated repeats, shaded.
        controls: label -> ``(n,)`` a control model's loss on translated repeats (dashed).
        other_seeds: label -> ``(n,)`` the same model's loss on translated repeats from other seeds (thin lines,
            one legend entry).
        chance: a uniform guess's loss, drawn dotted.
    """
    fig, axes = new_figure(1, 1, width=6.9, height=3.6)
    ax: Axes = axes[0, 0]
    x = to_numpy(steps)
    shade_window(ax, window)
    for i, curve in enumerate((other_seeds or {}).values()):
        label_once = "translated, other seeds" if i == 0 else None
        ax.plot(x, to_numpy(curve), color="tab:orange", lw=0.9, alpha=0.6, label=label_once)
    for (label, curve), colour in zip((controls or {}).items(), ("tab:red", "tab:gray", "tab:purple")):
        ax.plot(x, to_numpy(curve), color=colour, ls="--", lw=1.5, label=label)
    ax.plot(x, to_numpy(exact), color="tab:blue", lw=2, label="exact repeats")
    ax.plot(x, to_numpy(translated), color="tab:orange", lw=2.4, label="translated repeats")
    if chance is not None:
        ax.axhline(chance, color="black", lw=0.8, ls=":", label="uniform guess within the language")
    ax.margins(x=0)
    finish_axis(ax, xlabel="training step", ylabel="loss (nats)", grid="y")
    return legend_below(fig, axes, "Loss on repeated tokens over training")


def cross_language_heads(models: Mapping[str, Mapping[str, Array]]) -> Figure:
    """Every head of several models on two planes: where it attends (same- against cross-language prefix matching)
    and what its OV circuit writes (copy share against translation share).

    Args:
        models: model name -> ``{"prefix matching", "cross prefix matching", "ov copy", "ov translation"}``, each
            ``(n_layers, n_heads)``; at most four models.
    """
    if not 1 <= len(models) <= 4:
        raise ValueError(f"give 1 to 4 models, got {len(models)}")
    needed = {"prefix matching", "cross prefix matching", "ov copy", "ov translation"}
    for name, measures in models.items():
        if missing := needed - set(measures):
            raise ValueError(f"model {name!r} lacks {sorted(missing)}")
    fig, axes = new_figure(2, 1, width=3.45, height=3.6)
    planes = (
        (
            "prefix matching",
            "cross prefix matching",
            "Where it attends",
            "same-language prefix matching",
            "cross-language prefix matching",
        ),
        (
            "ov copy",
            "ov translation",
            "What its OV circuit writes",
            "share of tokens B whose top is B",
            "share whose top is translate(B)",
        ),
    )
    for ax, (x_key, y_key, title, xlabel, ylabel) in zip(axes[0], planes):
        if x_key == "ov copy":  # the two shares add up to at most 1
            ax.plot([0, 1], [1, 0], color="0.8", lw=0.8)
        for (name, measures), marker in zip(models.items(), ["o", "s", "^", "D"]):
            x, y = to_numpy(measures[x_key]).ravel(), to_numpy(measures[y_key]).ravel()
            ax.scatter(x, y, marker=marker, s=40, alpha=0.8, label=name)
        ax.set_xlim(-0.04, 1.04)
        ax.set_ylim(-0.04, 1.04)
        ax.set_xticks(np.linspace(0, 1, 3))
        ax.set_yticks(np.linspace(0, 1, 3))
        finish_axis(ax, xlabel=xlabel, ylabel=ylabel, title=title, title_size=10, label_size=MIN_FONT, grid="both")
    return legend_below(fig, axes, "Every head: same-language against cross-language")
