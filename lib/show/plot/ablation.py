"""Figures of ablation (chapter 7): what removing heads does to in-context learning, at the end and over training."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from lib.show._common import (
    ICL_SCORE_LABEL,
    MIN_FONT,
    Array,
    Window,
    figure_of,
    finish_axis,
    finish_figure,
    legend_below,
    new_figure,
    shade_window,
    step_edges,
    symmetric_bound,
    to_numpy,
)

ABLATION_COLOURS = {"full": "tab:red", "pattern-preserving": "tab:blue"}
"""Colour of each ablation kind in the figures of chapter 7."""


def ablation_effects(names: Sequence[str], panels: Mapping[str, Mapping[str, Array]], *, title: str = "") -> Figure:
    """Grouped bars, one group per ablation and one bar per ablation kind, in stacked panels, one legend below them.

    Each panel says what it shows in its title, which has the figure's width (as y-labels, long names ran into the
    next panel's); the legend sits below the panels, where it covers no bar.

    Args:
        names: ``n`` ablation labels (e.g. ``"L1H2"``, ``"all of layer 1"``).
        panels: panel title -> kind -> ``(n,)`` values, e.g. ``{"share of ICL score removed": {"full": ..., ...}}``.
    """
    fig, axes = new_figure(1, len(panels), width=max(7.0, 0.62 * len(names)), height=2.3, sharex=True)
    x = np.arange(len(names))
    for ax, (label, by_kind) in zip(axes[:, 0], panels.items()):
        width = 0.8 / len(by_kind)
        for j, (kind, values) in enumerate(by_kind.items()):
            ax.bar(
                x - 0.4 + width * (j + 0.5),
                to_numpy(values),
                width * 0.92,
                color=ABLATION_COLOURS.get(kind),
                label=f"{kind} ablation",
            )
        ax.axhline(0, color="black", lw=0.8)
        finish_axis(ax, title=label, title_size=MIN_FONT, grid="y")
    axes[-1, 0].set_xticks(x, names, fontsize=MIN_FONT, rotation=30, ha="right")
    finish_axis(axes[-1, 0], xlabel="heads removed", label_size=MIN_FONT)
    return legend_below(fig, axes, title)


def ablation_over_training(
    steps: Array, change: Mapping[str, Array], row_names: Sequence[str], *, window: Window | None = None
) -> Figure:
    """Heatmaps, heads (rows) x checkpoints (columns), of how much removing a head raises the ICL score.

    Args:
        steps: ``(n_checkpoints,)``. change: kind -> ``(n_checkpoints, n_rows)`` ICL score with the head
            removed minus without (nats; positive = in-context learning lost). One colour scale for all panels.
        row_names: the ``n_rows`` heads' labels.
        window: ``(start, end)`` steps of the phase change, marked with dashed lines.
    """
    s = to_numpy(steps)
    grids = {kind: to_numpy(v).T for kind, v in change.items()}
    vmax = symmetric_bound(grids.values())
    fig, axes = new_figure(len(grids), 1, width=5.2, height=0.32 * len(row_names) + 1.6)
    panels: list[Axes] = list(axes[0])
    for ax, (kind, grid) in zip(panels, grids.items()):
        im = ax.pcolormesh(
            step_edges(s, extend=True),
            np.arange(len(row_names) + 1) - 0.5,
            grid,
            cmap="RdBu_r",
            vmin=-vmax,
            vmax=vmax,
            shading="flat",
        )
        ax.set_yticks(range(len(row_names)), row_names, fontsize=MIN_FONT)
        ax.invert_yaxis()
        if window is not None:
            for edge in window:
                ax.axvline(edge, color="black", ls="--", lw=1)
        finish_axis(ax, xlabel="training step", title=f"{kind} ablation", title_size=10)
    # one colour bar spans all panels: tight_layout cannot place it; the constrained layout places it, and the
    # overall title above the panel titles
    fig.set_layout_engine("constrained")
    fig.colorbar(im, ax=panels, label="ICL score change (nats; > 0 = ICL lost)", fraction=0.046, pad=0.04)
    return finish_figure(fig, title="Removing one head at a time, at every checkpoint", title_size=11, tight=False)


def icl_with_heads_removed(
    steps: Array,
    intact: Array,
    removed: Mapping[str, Array],
    *,
    window: Window | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """The ICL score over training, for the intact model (a thick black line, as in every figure of chapter 7) and
    with groups of heads removed; the legend below the panel, where it covers no curve.

    Args:
        steps: ``(n_checkpoints,)``.
        intact: ``(n_checkpoints,)`` ICL scores of the intact model (negative = in-context learning).
        removed: label -> ``(n_checkpoints,)`` ICL scores with those heads removed.
        styles: label of ``removed`` -> keyword arguments of ``Axes.plot`` (default: the next colour of the cycle).
    """
    fig, axes = new_figure(1, 1, width=7.0, height=3.6)
    ax: Axes = axes[0, 0]
    x = to_numpy(steps)
    shade_window(ax, window)
    ax.axhline(0, color="black", lw=0.8)
    ax.plot(x, to_numpy(intact), label="intact", color="black", lw=2)
    for label, values in removed.items():
        ax.plot(x, to_numpy(values), label=label, **(styles or {}).get(label, {}))
    finish_axis(
        ax,
        xlabel="training step",
        ylabel=ICL_SCORE_LABEL,
        title="In-context learning with groups of heads removed",
        title_size=10,
    )
    return legend_below(fig, axes, None)


def ablated_loss_along_sequence(
    clean: Array, ablated: Array, *, period: int | None = None, title: str = "", ax: Axes | None = None
) -> Figure:
    """Per-token loss along one sequence, intact and with a head removed; the gap between them shaded.

    Args:
        clean, ablated: ``(seq - 1,)`` per-token losses (entry ``p`` predicts token ``p + 1``).
        period: the sequence's repeat period; a line marks where the current token has been seen before.
        ax: draw into this panel of an existing figure instead of a new figure.
    """
    c, a = to_numpy(clean), to_numpy(ablated)
    if ax is None:
        fig, axes = new_figure(1, 1, width=7.0, height=3.2)
        ax = axes[0, 0]
    else:
        fig = figure_of(ax)
    x = np.arange(1, len(c) + 1)
    ax.fill_between(x, c, a, where=a >= c, color="tab:red", alpha=0.25, label="loss added by the ablation")
    ax.fill_between(x, c, a, where=a < c, color="tab:green", alpha=0.25, label="loss removed by the ablation")
    ax.plot(x, c, color="black", lw=1.2, marker="o", ms=2.5, label="intact")
    ax.plot(x, a, color="tab:red", lw=1.2, marker="o", ms=2.5, label="head removed")
    if period is not None:
        ax.axvline(period + 1.5, color="tab:green", ls="--", lw=1, label="current token seen before")
    finish_axis(
        ax,
        xlabel="position of the predicted token",
        ylabel="loss (nats)",
        title=title,
        title_size=MIN_FONT,
        legend=True,
        legend_size=MIN_FONT,
        legend_loc="upper right",
    )
    return fig


def ablated_loss_grid(
    panels: Sequence[tuple[Array, Array, str]], *, period: int | None = None, ncols: int = 2
) -> Figure:
    """Several :func:`ablated_loss_along_sequence` panels (clean, ablated, title) in a grid, one legend below them
    (inside the first panel it covered that panel's curves).

    The explorer's static twin.
    """
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(ncols, nrows, width=5.0, height=3.3, sharey=True)  # the legend below takes ~0.7 inch
    cells: list[Axes] = list(axes.flat)
    for i, (ax, (clean, ablated, title)) in enumerate(zip(cells, panels)):
        ablated_loss_along_sequence(clean, ablated, period=period, title=title, ax=ax)
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        if i % ncols:
            ax.set_ylabel("")  # the y axis is shared: labelled on the left column only
    for ax in cells[len(panels) :]:
        ax.set_visible(False)
    return legend_below(fig, axes, None)


def pair_against_other_pairs(
    pair: Mapping[str, Mapping[str, Array]],
    others: Mapping[str, Mapping[str, Array]],
    *,
    pair_label: str = "the pair",
    title: str = "",
) -> Figure:
    """The share of the ICL score one pair of heads removes, against every other pair of the same layer: one panel
    per kind of late position, one column of points per replacement (chapter 7's mixed task).

    Args:
        pair: replacement (``"zero"``, ``"mean"``, ...) -> kind of position (``"repeated"``, ...) -> the share the
            pair removes (a number; 1 = all of it).
        others: the same keys -> ``(n_pairs,)`` shares, one per other pair.
        pair_label: the pair's name in the legend.

    Raises:
        ValueError: ``others`` does not have the replacements and kinds of ``pair``.
    """
    replacements = list(pair)
    kinds = list(pair[replacements[0]]) if replacements else []
    if not kinds or any(list(pair[r]) != kinds for r in replacements):
        raise ValueError(f"pair must give the same kinds of position for every replacement, got {pair!r}")
    if list(others) != replacements or any(list(others[r]) != kinds for r in replacements):
        raise ValueError(
            f"others must have pair's replacements {replacements} and kinds {kinds}, got "
            f"{ {r: list(v) for r, v in others.items()} }"
        )
    fig, axes = new_figure(len(kinds), 1, width=3.4, height=3.2, sharey=True)
    for ax, kind in zip(axes[0], kinds):
        ax.axhline(0, color="black", lw=0.8)
        for i, r in enumerate(replacements):
            values = np.sort(to_numpy(others[r][kind]).ravel()) * 100
            spread = np.linspace(-0.18, 0.18, len(values)) if len(values) > 1 else np.zeros(len(values))
            ax.scatter(i + spread, values, s=16, color="tab:gray", alpha=0.8, label="another pair of the layer")
            share = float(to_numpy(pair[r][kind])) * 100
            ax.scatter([i], [share], s=70, marker="D", color="tab:blue", zorder=3, label=pair_label)
        ax.set_xticks(range(len(replacements)), replacements, fontsize=MIN_FONT)
        ax.set_xlim(-0.5, len(replacements) - 0.5)
        finish_axis(ax, xlabel="what replaces the heads", title=f"late {kind} positions", title_size=MIN_FONT, grid="y")
    finish_axis(axes[0, 0], ylabel="share of the ICL score removed (%)", label_size=MIN_FONT)
    return legend_below(fig, axes, title)


def path_cut_grid(
    shares: Array,
    row_names: Sequence[str],
    column_names: Sequence[str],
    *,
    title: str = "Cutting one head from another head's keys",
) -> Figure:
    """A heatmap of what cutting one edge costs: row ``i``, column ``j`` is the share of the ICL score removed when
    source head ``i``'s output is cut from the keys of target head ``j`` alone (red = removed, blue = gained).

    Args:
        shares: ``(n_sources, n_targets)`` shares removed (1 = all of it).
        row_names, column_names: the source and the target heads' labels.

    Raises:
        ValueError: the names do not match the shape of ``shares``.
    """
    v = to_numpy(shares) * 100
    if v.ndim != 2 or v.shape != (len(row_names), len(column_names)):
        raise ValueError(
            f"shares must have shape (len(row_names), len(column_names)) = ({len(row_names)}, {len(column_names)}), "
            f"got {v.shape}"
        )
    fig, axes = new_figure(1, 1, width=5.2, height=0.34 * len(row_names) + 1.6)
    ax: Axes = axes[0, 0]
    bound = symmetric_bound([v])
    im = ax.imshow(v, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(len(row_names)), row_names, fontsize=MIN_FONT)
    ax.set_xticks(range(len(column_names)), column_names, fontsize=MIN_FONT, rotation=90)
    finish_axis(
        ax,
        xlabel="layer-1 head whose keys lose it",
        ylabel="layer-0 head cut",
        title=title,
        title_size=10,
        label_size=MIN_FONT,
    )
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("share of the repeat ICL removed (%)", fontsize=MIN_FONT)
    bar.ax.tick_params(labelsize=MIN_FONT)
    return finish_figure(fig)


def zero_against_mean(
    zero: Mapping[str, Array],
    mean: Mapping[str, Array],
    names: Sequence[str],
    *,
    title: str = "Share of the ICL score removed: zero against mean ablation",
) -> Figure:
    """Each ablation's share of the ICL score removed with the removed output set to zero (x) and to its mean (y),
    one panel per ablation kind; on the diagonal the two replacements agree.

    Args:
        zero, mean: ablation kind -> ``(len(names),)`` shares removed (1 = all of it).
        names: what each entry removes: a head's name ("L0H1", layer 0 in grey, layer 1 in blue) or a group.
    """
    if list(zero) != list(mean) or not zero:
        raise ValueError(f"zero and mean must name the same kinds, got {list(zero)} and {list(mean)}")
    styles = {
        "layer-0 head": ("tab:gray", "o"),
        "layer-1 head": ("tab:blue", "o"),
        "group of heads": ("black", "D"),
    }

    def style(name: str) -> str:
        return (
            "layer-0 head" if name.startswith("L0H") else "layer-1 head" if name.startswith("L1H") else "group of heads"
        )

    shares = {kind: (to_numpy(zero[kind]).ravel(), to_numpy(mean[kind]).ravel()) for kind in zero}
    for kind, (x, y) in shares.items():
        if not len(x) == len(y) == len(names):
            raise ValueError(f"{kind}: {len(x)} and {len(y)} shares for {len(names)} names")
    every = np.concatenate([v for pair in shares.values() for v in pair])
    low, high = min(0.0, float(every.min())) - 0.05, max(1.0, float(every.max())) + 0.05  # one range: panels share y
    fig, axes = new_figure(len(zero), 1, width=3.4, height=3.4, sharey=True)
    for ax, (kind, (x, y)) in zip(axes[0], shares.items()):
        ax.plot([low, high], [low, high], color="grey", lw=0.8, ls=":", label="zero = mean")
        for label, (colour, marker) in styles.items():
            chosen = [i for i, name in enumerate(names) if style(name) == label]
            if chosen:
                ax.scatter(x[chosen], y[chosen], color=colour, marker=marker, s=28, label=label, zorder=3)
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        finish_axis(ax, xlabel="removed, zero ablation", title=f"{kind} ablation", title_size=MIN_FONT)
    axes[0, 0].set_ylabel("removed, mean ablation")
    return legend_below(fig, axes, title)
