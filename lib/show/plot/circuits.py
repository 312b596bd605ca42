"""Figures of an induction circuit's weights (chapter 5): token-to-token matrices, composition scores, the QK cut."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from lib.show._common import (
    MIN_FONT,
    Array,
    finish_axis,
    finish_figure,
    legend_below,
    new_figure,
    signed_heatmap,
    to_numpy,
)


def circuit_matrices(
    matrices: Mapping[str, Array],
    *,
    title: str = "",
    xlabels: Mapping[str, str] | None = None,
    ylabels: Mapping[str, str] | None = None,
) -> Figure:
    """Signed heatmaps of a few circuit matrices side by side (e.g. a head's QK and OV circuits).

    Args:
        matrices: panel title -> 2-D array. xlabels, ylabels: panel title -> axis label.
    """
    fig, axes = new_figure(len(matrices), 1, width=4.2, height=3.8)
    for ax, (name, m) in zip(axes[0], matrices.items()):
        signed_heatmap(ax, m, title=name, xlabel=(xlabels or {}).get(name, ""), ylabel=(ylabels or {}).get(name, ""))
    return finish_figure(fig, title=title, title_size=11)


def composition_score_grid(
    scores: Mapping[str, Array],
    baseline: Mapping[str, Array],
    *,
    row_names: Sequence[str] | None = None,
    column_names: Sequence[str] | None = None,
    row_label: str = "layer-0 head (writes)",
    column_label: str = "layer-1 head (reads)",
) -> Figure:
    """Composition scores between two layers' heads, one panel per kind, coloured against a random baseline.

    Each cell is annotated with its score (without the leading zero, so that four heads' scores fit side by side);
    the colour is centred at the mean of the random baseline, so red cells compose more than random heads do and blue
    cells less (no colour bar: the numbers are on the cells). Row names are on the first panel only.

    Args:
        scores: kind (e.g. ``"Q"``, ``"K"``, ``"V"``; at most three) -> ``(source heads, target heads)``.
        baseline: kind -> the same scores on random models (any shape; mean and standard deviation are shown).
        row_names, column_names: tick labels (default: the head index); column names are written upwards.
    """
    from matplotlib.colors import TwoSlopeNorm

    values = {kind: to_numpy(s) for kind, s in scores.items()}
    random = {kind: to_numpy(baseline[kind]).ravel() for kind in values}
    low = min(min(float(v.min()), float(random[k].min())) for k, v in values.items())
    high = max(max(float(v.max()), float(random[k].max())) for k, v in values.items())
    fig, axes = new_figure(len(values), 1, width=2.6, height=3.2, sharey=True)
    for k, (ax, (kind, v)) in enumerate(zip(axes[0], values.items())):
        mean, sd = float(random[kind].mean()), float(random[kind].std())
        norm = TwoSlopeNorm(mean, min(low, mean - 1e-6), max(high, mean + 1e-6))
        ax.imshow(v, cmap="RdBu_r", norm=norm, interpolation="nearest")
        for (i, j), x in np.ndenumerate(v):
            dark = abs(float(norm(x)) - 0.5) > 0.3  # white text on the saturated ends of the colour map
            label = f"{x:.2f}".replace("0.", ".", 1) if abs(x) < 1 else f"{x:.1f}"
            ax.text(j, i, label, ha="center", va="center", fontsize=MIN_FONT, color="white" if dark else "black")
        rows, cols = v.shape
        ax.set_yticks(range(rows), list(row_names) if row_names is not None else [str(i) for i in range(rows)])
        ax.set_xticks(
            range(cols),
            list(column_names) if column_names is not None else [str(j) for j in range(cols)],
            rotation=90,
        )
        ax.tick_params(labelsize=MIN_FONT, labelleft=k == 0)
        finish_axis(
            ax,
            xlabel=column_label,
            ylabel=row_label if k == 0 else None,
            title=f"{kind}-composition\nrandom {mean:.3f} ± {sd:.3f}",
            title_size=MIN_FONT,
            label_size=MIN_FONT,
        )
    return finish_figure(fig, title="Composition scores (colour centred at the random mean)", title_size=10)


CUT_KEYS = ("prefix", "repeated", "first", "bos")
"""What :func:`qk_cut_effects` reads from each condition's measures."""


def qk_cut_effects(
    cuts: Mapping[str, Mapping[str, Array | float]],
    *,
    even_prefix: float,
    chance: float,
    title: str = "Layer 0 cut from layer 1's keys, queries or both",
) -> Figure:
    """Chapter 5's key/query cut, one row per condition, three panels: the induction heads' prefix matching (a dot
    per head) against attention spread evenly; the loss on repeated and on first-seen tokens against chance; the
    induction heads' attention on BOS at first-seen tokens (a dot per head).

    Args:
        cuts: condition (e.g. ``"intact"``, ``"keys cut"``) -> ``{"prefix": (heads,), "repeated": nats,
            "first": nats, "bos": (heads,)}``, in the order drawn from the top.
        even_prefix: prefix matching of attention spread evenly over the causal context.
        chance: the loss of a uniform guess (nats).
    """
    if not cuts or any(set(CUT_KEYS) - set(c) for c in cuts.values()):
        raise ValueError(f"cuts must map each condition to the measures {CUT_KEYS}, got {list(cuts.items())[:1]}")
    names = list(cuts)
    rows = np.arange(len(names))
    fig, axes = new_figure(3, 1, width=2.3, height=0.6 * len(names) + 1.6, sharey=True)
    prefix_ax, loss_ax, bos_ax = axes[0]
    for ax, key in ((prefix_ax, "prefix"), (bos_ax, "bos")):
        for row, name in zip(rows, names):
            values = to_numpy(cuts[name][key]).ravel()
            ax.plot(values, np.full(len(values), row), "o", color="tab:blue", alpha=0.6, label="induction head")
        ax.set_xlim(-0.05, 1.05)
    prefix_ax.axvline(even_prefix, color="grey", ls="--", label="attention spread evenly")
    for key, offset, marker, label in (("repeated", -0.15, "o", "repeated tokens"), ("first", 0.15, "s", "first-seen")):
        loss = [float(to_numpy(cuts[name][key])) for name in names]
        loss_ax.plot(loss, rows + offset, marker, ls="none", color="black", mfc="white" if marker == "s" else None)
        loss_ax.lines[-1].set_label(f"loss: {label}")
    loss_ax.axvline(chance, color="tab:red", ls=":", label="chance (uniform guess)")
    loss_ax.set_xlim(left=-0.3)
    prefix_ax.set_yticks(rows, names)
    prefix_ax.set_ylim(len(names) - 0.5, -0.5)  # the first condition on top
    for ax, panel, xlabel in (
        (prefix_ax, "prefix matching", "score"),
        (loss_ax, "loss", "nats"),
        (bos_ax, "attention on BOS at first-seen tokens", "share"),
    ):
        ax.tick_params(labelsize=MIN_FONT)
        finish_axis(ax, xlabel=xlabel, title=panel, title_size=MIN_FONT, label_size=MIN_FONT, grid="x")
    return legend_below(fig, axes, title)
