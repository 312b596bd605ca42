"""Figures of induction heads (chapter 5): the hand-built circuit, the phase change, head scores, attention."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.core import validate
from lib.core.heads import head_name
from lib.induction.scores import is_induction_head
from lib.show._common import (
    ICL_SCORE_LABEL,
    MAX_COLUMNS,
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
    to_numpy,
)


def phase_change_curves(
    steps: Array,
    repeated: Array,
    other: Array,
    *,
    window: Window | None = None,
    control_repeated: Array | None = None,
    vocab: int | None = None,
) -> Figure:
    """Loss on tokens an induction head can predict vs. every other token, over training.

    Args:
        steps: ``(n,)`` checkpoint steps. repeated, other: ``(n,)`` mean losses (nats).
        window: ``(start, end)`` steps of the phase change, shaded.
        control_repeated: ``(n,)`` the one-layer control's loss on the predictable tokens.
        vocab: the number of tokens a guess is spread over; draws the chance level ``log(vocab)``.
    """
    fig, axes = new_figure(1, 1, width=7.0, height=3.8)
    ax: Axes = axes[0, 0]
    x = to_numpy(steps)
    shade_window(ax, window)
    ax.plot(x, to_numpy(other), color="tab:gray", label="2 layers: first-seen tokens")
    ax.plot(x, to_numpy(repeated), color="tab:blue", lw=2, label="2 layers: repeated tokens")
    if control_repeated is not None:
        ax.plot(x, to_numpy(control_repeated), color="tab:red", ls="--", label="1 layer: repeated tokens")
    if vocab is not None:
        ax.axhline(np.log(vocab), color="black", lw=0.8, ls=":", label=f"chance, log {vocab}")
    finish_axis(
        ax,
        xlabel="training step",
        ylabel="loss (nats)",
        title="The phase change: repeated tokens become predictable all at once",
        legend=True,
        legend_loc="lower left",
    )
    return finish_figure(fig)


def icl_score_curve(
    steps: Array,
    icl: Array,
    *,
    window: Window | None = None,
    control_icl: Array | None = None,
    early: int | None = None,
    late: int | None = None,
) -> Figure:
    """The in-context-learning score over training (negative = in-context learning).

    Args:
        steps: ``(n,)`` checkpoint steps. icl, control_icl: ``(n,)`` scores of the two-layer model and of
            the one-layer control. early, late: the token positions the score compares (named in the title).
    """
    fig, axes = new_figure(1, 1, width=7.0, height=3.4)
    ax: Axes = axes[0, 0]
    x = to_numpy(steps)
    shade_window(ax, window)
    ax.axhline(0, color="black", lw=0.8)
    ax.plot(x, to_numpy(icl), color="tab:blue", lw=2, label="2 layers")
    if control_icl is not None:
        ax.plot(x, to_numpy(control_icl), color="tab:red", ls="--", label="1 layer")
    where = f" (loss at token {late} minus loss at token {early})" if early is not None and late is not None else ""
    finish_axis(
        ax,
        title="In-context-learning score" + where,
        title_size=10,
        xlabel="training step",
        ylabel=ICL_SCORE_LABEL,
        legend=True,
    )
    return finish_figure(fig)


def loss_by_position_image(steps: Array, loss_by_position: Array, *, window: Window | None = None) -> Figure:
    """Per-token loss by context position (x) over training (y), as an image.

    Args:
        steps: ``(n_checkpoints,)``.
        loss_by_position: ``(n_checkpoints, seq - 1)`` mean loss at each position.
    """
    v = to_numpy(loss_by_position)
    s = to_numpy(steps)
    fig, axes = new_figure(1, 1, width=7.0, height=4.0)
    ax: Axes = axes[0, 0]
    # rows are checkpoints: draw each as a band between neighbouring steps so uneven spacing shows
    im = ax.pcolormesh(np.arange(v.shape[1] + 1) - 0.5, step_edges(s, extend=False), v, cmap="viridis", shading="flat")
    fig.colorbar(im, ax=ax, label="loss (nats)")
    if window is not None:
        for y in window:
            ax.axhline(y, color="white", ls="--", lw=1)
    finish_axis(
        ax,
        xlabel="context position of the predicted token",
        ylabel="training step",
        title="Per-token loss by position: late tokens become easy at the phase change",
        title_size=10,
    )
    return finish_figure(fig)


def loss_pca_trajectory(
    coords: Array,
    steps: Array,
    *,
    window: Window | None = None,
    explained: Array | None = None,
    control_coords: Array | None = None,
) -> Figure:
    """The training trajectory in the plane of the top two principal components of per-token loss.

    Args:
        coords: ``(n_checkpoints, 2)``. steps: ``(n_checkpoints,)``. window: ``(start, end)`` marked in gold.
        explained: ``(k >= 2,)`` share of the variance each component explains (named in the axis labels).
        control_coords: ``(n_checkpoints, 2)`` the one-layer control, drawn as a dashed red line.
    """
    c = to_numpy(coords)
    s = to_numpy(steps)
    fig, axes = new_figure(1, 1, width=5.6, height=4.4)
    ax: Axes = axes[0, 0]
    if control_coords is not None:
        cc = to_numpy(control_coords)
        ax.plot(cc[:, 0], cc[:, 1], color="tab:red", ls="--", lw=1.2, label="1 layer")
    ax.plot(c[:, 0], c[:, 1], color="lightgray", lw=1, zorder=1)
    points = ax.scatter(c[:, 0], c[:, 1], c=s, cmap="viridis", s=22, zorder=2)
    fig.colorbar(points, ax=ax, label="training step")
    if window is not None:
        inside = (s >= window[0]) & (s <= window[1])
        ax.scatter(
            c[inside, 0],
            c[inside, 1],
            facecolors="none",
            edgecolors="gold",
            s=90,
            lw=2,
            zorder=3,
            label="2 layers: phase change",
        )
    ax.annotate("start", c[0], fontsize=MIN_FONT)
    ax.annotate("end", c[-1], fontsize=MIN_FONT)
    labels = ["PC 1", "PC 2"]
    if explained is not None:
        e = to_numpy(explained)
        labels = [f"PC {i + 1} ({100 * e[i]:.0f}% of variance)" for i in range(2)]
    finish_axis(
        ax,
        xlabel=labels[0],
        ylabel=labels[1],
        title="Per-token-loss PCA: each model's path through training",
        title_size=10,
        legend=window is not None or control_coords is not None,
    )
    return finish_figure(fig)


HIGHLIGHT_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
"""Colours of the highlighted heads in :func:`head_scores_over_training`, in the order given (the others are grey)."""


def head_scores_over_training(
    steps: Array,
    scores: Mapping[str, Array],
    *,
    window: Window | None = None,
    highlight: Iterable[Sequence[int]] | None = None,
) -> Figure:
    """Every head's scores over training: one panel per score, stacked on one time axis, one line per head; the
    highlighted heads (e.g. the induction heads) thick, in colour and named in the legend, the others thin and grey.

    Args:
        steps: ``(n_checkpoints,)``.
        scores: name -> ``(n_checkpoints, n_layers, n_heads)``; at most three.
        window: ``(start, end)`` steps of the phase change, shaded.
        highlight: ``(layer, head)`` pairs, at most :data:`HIGHLIGHT_COLOURS` many (default: the head whose first
            score ends highest).
    """
    x = to_numpy(steps)
    values = {name: to_numpy(v) for name, v in scores.items()}
    if not 1 <= len(values) <= MAX_COLUMNS:
        raise ValueError(f"scores must name 1 to {MAX_COLUMNS} scores, got {len(values)}")
    first = next(iter(values.values()))
    _, layers, heads = first.shape
    if highlight is None:
        strong = [divmod(int(first[-1].argmax()), heads)]
    else:
        strong = [
            (validate.index("highlight's layer", pair[0], layers), validate.index("highlight's head", pair[1], heads))
            for pair in highlight
        ]
    if len(strong) > len(HIGHLIGHT_COLOURS):
        raise ValueError(f"highlight at most {len(HIGHLIGHT_COLOURS)} heads, got {len(strong)}")
    fig, axes = new_figure(1, len(values), width=6.9, height=2.3, sharex=True)
    for ax, (name, v) in zip(axes[:, 0], values.items()):
        shade_window(ax, window)
        if v.min() < 0:
            ax.axhline(0, color="black", lw=0.8)
        for head in np.ndindex(layers, heads):
            if head not in strong:
                ax.plot(x, v[:, head[0], head[1]], color="0.65", lw=0.8, label="other heads")
        for head, colour in zip(strong, HIGHLIGHT_COLOURS):
            ax.plot(x, v[:, head[0], head[1]], color=colour, lw=2.2, label=head_name(head))
        ax.margins(x=0)
        finish_axis(ax, title=name, title_size=MIN_FONT, grid="y")
    axes[-1, 0].set_xlabel("training step")
    return legend_below(fig, axes, "Head scores over training (L = layer, H = head)")


def induction_head_classifier(
    models: Mapping[str, Mapping[str, Array]], threshold: float, copying_threshold: float
) -> Figure:
    """Prefix matching (x) vs. copying (y) for every head of several models, with the induction-head region.

    The legend, below the panel, names each model's induction heads (:func:`lib.induction.scores.is_induction_head`):
    labels beside the points piled up where the heads of several models crowd into the region's corner.

    Args:
        models: model name -> ``{"prefix matching": (layers, heads), "copying": (layers, heads)}``; at most four.
        threshold, copying_threshold: an induction head scores at least these on prefix matching and on copying.
    """
    fig, axes = new_figure(1, 1, width=6.4, height=5.2)  # the legend below takes about an inch
    ax: Axes = axes[0, 0]
    ax.fill_between(
        [threshold, 1.02], copying_threshold, 1.05, color="tab:green", alpha=0.12, lw=0, label="induction head region"
    )
    ax.axvline(threshold, color="tab:green", ls="--", lw=1)
    ax.axhline(copying_threshold, color="tab:green", ls="--", lw=1)
    ax.axhline(0, color="black", lw=0.8)
    for (name, scores), marker in zip(models.items(), ["o", "s", "^", "D"]):
        p, c = to_numpy(scores["prefix matching"]), to_numpy(scores["copying"])
        found = is_induction_head(torch.as_tensor(p), torch.as_tensor(c), threshold, copying_threshold)
        heads = [head_name((layer, head)) for layer, head in found.nonzero().tolist()]
        label = f"{name}: no induction head"
        if heads:
            label = f"{name}: induction head{'s' if len(heads) > 1 else ''} {', '.join(heads)}"
        ax.scatter(p.ravel(), c.ravel(), marker=marker, s=45, label=label, alpha=0.85)
    lowest = min(float(to_numpy(scores["copying"]).min()) for scores in models.values())
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(min(lowest, 0.0) - 0.05, 1.05)  # copying spans [-1, 1]: show the negative half only when used
    finish_axis(
        ax,
        xlabel="prefix-matching score",
        ylabel="copying score",
        title="Induction head = high prefix matching and high copying",
        title_size=10,
    )
    return legend_below(fig, axes, None)


def attention_pattern(
    pattern: Array, tokens: Array | None = None, *, title: str = "", ax: Axes | None = None
) -> Figure:
    """One head's attention pattern ``(query, key)`` as an image (rows: from, columns: to).

    Args:
        tokens: ``(seq,)`` token ids, shown as tick labels (token 0 as ``BOS``) when there are at most 16.
        ax: draw into this panel of an existing figure instead of a new figure.
    """
    v = to_numpy(pattern)
    if ax is None:
        fig, axes = new_figure(1, 1, width=4.6, height=4.2)
        ax = axes[0, 0]
    else:
        fig = figure_of(ax)
    ax.imshow(v, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    ids = None if tokens is None else to_numpy(tokens)
    if ids is not None and len(ids) <= 16:
        labels = ["BOS" if int(t) == 0 else str(int(t)) for t in ids]
        ax.set_xticks(range(len(labels)), labels, fontsize=MIN_FONT, rotation=90)
        ax.set_yticks(range(len(labels)), labels, fontsize=MIN_FONT)
    finish_axis(ax, xlabel="attends to (key)", ylabel="from (query)", title=title, title_size=MIN_FONT)
    return fig


def attention_before_during_after(
    patterns: Sequence[Array], labels: Sequence[str], tokens: Array | None = None, *, head_name: str = ""
) -> Figure:
    """One head's attention pattern at several checkpoints side by side (the explorer's static twin).

    Args:
        patterns: one ``(seq, seq)`` pattern per checkpoint. labels: the title of each panel.
    """
    ncols = min(len(patterns), MAX_COLUMNS)
    fig, axes = new_figure(ncols, -(-len(patterns) // ncols), width=3.2, height=3.3)
    for ax, p, label in zip(axes.flat, patterns, labels):
        attention_pattern(p, tokens, title=label, ax=ax)
    for ax in list(axes.flat)[len(patterns) :]:
        ax.axis("off")
    return finish_figure(
        fig,
        title=f"Attention of {head_name} on a repeated random sequence"
        if head_name
        else "Attention on a repeated random sequence",
        title_size=10,
    )


def loss_along_sequence(loss: Array, *, period: int | None = None, vocab: int | None = None, title: str = "") -> Figure:
    """Per-token loss along a sequence (mean over samples), marking where the repeat starts.

    Args:
        loss: ``(seq - 1,)`` (entry ``p`` predicts token ``p + 1``).
        period: the repeat period; a line marks where the current token has been seen before.
        vocab: draws the chance level ``log(vocab)``.
    """
    v = to_numpy(loss)
    fig, axes = new_figure(1, 1, width=7.0, height=3.2)
    ax: Axes = axes[0, 0]
    ax.plot(np.arange(1, len(v) + 1), v, marker="o", ms=3, color="tab:blue", label="loss of predicting this token")
    if vocab is not None:
        ax.axhline(np.log(vocab), color="black", ls=":", lw=0.8, label=f"uniform guess, log {vocab}")
    if period is not None:
        ax.axvline(period + 1.5, color="tab:green", ls="--", lw=1, label="current token seen before")
    finish_axis(
        ax, xlabel="position of the predicted token", ylabel="loss (nats)", title=title, title_size=10, legend=True
    )
    return finish_figure(fig)


def phase_change_signatures(
    steps: Array,
    signatures: Mapping[str, Array],
    *,
    window: Window | None = None,
    marks: Mapping[str, float] | None = None,
    train_steps: Array | None = None,
    train_loss: Array | None = None,
    train_smooth: Array | None = None,
    smooth_label: str = "mean of the last 10 steps",
    scale: Literal["last", "peak"] = "last",
    xmax: float | None = None,
    title: str = "Four signatures, one time axis",
) -> Figure:
    """Olsson et al.'s co-occurring signatures of the phase change on one time axis, and the training loss.

    Left: each signature rescaled to the share of its total change covered so far (0 at the first checkpoint,
    1 at the last), so curves in different units (nats, scores) share one axis; a dotted line in the
    curve's colour marks its ``marks`` step (e.g. where it covers half its change). Right (when
    ``train_loss`` is given): the training loss of every step, raw and smoothed.

    Args:
        steps: ``(K,)`` checkpoint steps. signatures: name -> ``(K,)`` curve (a loss or a score).
        window: ``(start, end)`` steps of the phase change, shaded in both panels.
        marks: name -> step to mark for that signature.
        train_steps, train_loss: ``(n,)`` every training step and its batch loss.
        train_smooth: ``(K,)`` the training loss averaged up to each checkpoint, drawn at ``steps`` and
            labelled ``smooth_label``.
        scale: ``"last"``: 1 is the last value; ``"peak"``: 1 is the maximum (for rising curves that fall back
            after their peak, as :func:`lib.induction.dynamics.rise_step` dates them).
        xmax: show steps 0 to ``xmax`` (the curves are still scaled over all ``steps``); None: all of them.
        title: the left panel's title.

    One legend for both panels, below them (inside, it covered the curves).
    """
    if scale not in ("last", "peak"):
        raise ValueError(f"scale must be 'last' or 'peak', got {scale!r}")
    panels = 1 if train_loss is None else 2
    fig, axes = new_figure(panels, 1, width=4.6, height=4.8)  # the legend below takes about an inch
    ax: Axes = axes[0, 0]
    x = to_numpy(steps)
    shade_window(ax, window)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:gray"]
    for (name, curve), colour in zip(signatures.items(), colours):
        v = to_numpy(curve)
        span = (v[-1] if scale == "last" else v.max()) - v[0]
        progress = (v - v[0]) / span if span != 0 else np.zeros_like(v)
        ax.plot(x, progress, color=colour, lw=1.6, label=name)
        if marks is not None and name in marks:
            ax.axvline(float(marks[name]), color=colour, ls=":", lw=1.2)
    ax.axhline(0.5, color="black", lw=0.6, ls="--")
    finish_axis(
        ax,
        xlabel="training step",
        ylabel="share of its total change" if scale == "last" else "share of its rise to its peak",
        title=title,
        title_size=10,
    )
    if train_loss is not None:
        right: Axes = axes[0, 1]
        shade_window(right, window)
        t = np.arange(1, len(to_numpy(train_loss)) + 1) if train_steps is None else to_numpy(train_steps)
        right.plot(t, to_numpy(train_loss), color="lightgray", lw=0.7, label="each step's batch")
        if train_smooth is not None:
            right.plot(x, to_numpy(train_smooth), color="black", lw=1.6, label=smooth_label)
        finish_axis(
            right,
            xlabel="training step",
            ylabel="training loss (nats)",
            title="The training loss",
            title_size=10,
        )
    if xmax is not None:
        for panel in axes[0]:
            panel.set_xlim(0, xmax)
    return legend_below(fig, axes, None)


def positional_qk_heads(scores: Array, shares: Array, *, layer: int = 0) -> Figure:
    """Each head's attention score from positions alone (:func:`lib.induction.circuits.positional_qk`), a panel each.

    Each row is centred over its causal keys (the softmax ignores a row's offset), so a head that attends one
    position back shows a red line just below the diagonal; the keys after the query are left blank.

    Args:
        scores: ``(heads, seq, seq)`` query position x key position, ``-inf`` above the diagonal.
        shares: ``(heads,)`` the share of each head's positional attention on the key one back, in the titles.
        layer: the heads' layer, for the titles.
    """
    from matplotlib.colors import TwoSlopeNorm

    values, share = to_numpy(scores).astype(float), to_numpy(shares)
    if values.ndim != 3 or values.shape[1] != values.shape[2] or share.shape != values.shape[:1]:
        raise ValueError(f"scores must be (heads, seq, seq) and shares (heads,), got {values.shape} and {share.shape}")
    causal = np.isfinite(values)
    values = np.where(causal, values, np.nan)
    values = values - np.nanmean(values, axis=-1, keepdims=True)
    n = values.shape[0]
    columns = min(n, 2)
    fig, axes = new_figure(columns, -(-n // columns), width=3.4, height=3.0)
    for h, ax in enumerate(axes.flat):
        if h >= n:
            ax.set_visible(False)
            continue
        bound = float(np.nanmax(np.abs(values[h]))) or 1.0
        im = ax.imshow(
            values[h], cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto", interpolation="nearest"
        )
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        finish_axis(
            ax,
            xlabel="key position",
            ylabel="query position",
            title=f"L{layer}H{h}: {share[h]:.0%} one back",
            title_size=10,
        )
    return finish_figure(fig, title="Attention scores from positions alone (rows centred)", title_size=11)
