"""Every static figure the chapters show.

Functions take data (tensors, arrays, dicts of numbers) and return a ``matplotlib.figure.Figure``;
they never train. Labels in plain words; diverging colour maps centred at zero for signed weights.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure


def to_numpy(x) -> np.ndarray:
    """A CPU float NumPy array from a tensor, array or list."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def signed_heatmap(ax, values, *, title: str = "", xlabel: str = "", ylabel: str = "", colorbar: bool = True):
    """Draw a 2-D array with a red/blue map centred at zero; returns the image."""
    v = to_numpy(values)
    bound = float(np.abs(v).max()) or 1.0
    im = ax.imshow(v, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -bound, bound), aspect="auto", interpolation="nearest")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6, **kwargs) -> tuple[Figure, np.ndarray]:
    """A figure with a grid of axes (always returned as a 2-D array), sized per panel."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kwargs)
    return fig, axes


# ---------------------------------------------------------------------------------------------
# Out-of-context reasoning (chapters 1-4)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------


def _shade_window(ax, window, label: str = "phase change") -> None:
    if window is not None:
        ax.axvspan(window[0], window[1], color="gold", alpha=0.3, label=label)


def phase_change_curves(steps, repeated, other, *, window=None, control_repeated=None, vocab: int | None = None) -> Figure:
    """Loss on tokens an induction head can predict vs. every other token, over training.

    Args:
        steps: ``(n,)`` checkpoint steps. repeated, other: ``(n,)`` mean losses (nats).
        window: ``(start, end)`` steps of the phase change, shaded.
        control_repeated: ``(n,)`` the one-layer control's loss on the predictable tokens.
        vocab: draws the chance level ``log(vocab)``.
    """
    fig, axes = new_figure(1, 1, width=7.0, height=3.8)
    ax = axes[0, 0]
    _shade_window(ax, window)
    ax.plot(to_numpy(steps), to_numpy(other), color="tab:gray", label="2 layers: first-seen tokens")
    ax.plot(to_numpy(steps), to_numpy(repeated), color="tab:blue", lw=2, label="2 layers: repeated tokens")
    if control_repeated is not None:
        ax.plot(to_numpy(steps), to_numpy(control_repeated), color="tab:red", ls="--", label="1 layer: repeated tokens")
    if vocab is not None:
        ax.axhline(np.log(vocab), color="black", lw=0.8, ls=":", label="chance, log(vocab)")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss (nats)")
    ax.set_title("The phase change: repeated tokens become predictable all at once")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def icl_score_curve(steps, icl, *, window=None, control_icl=None, early: int | None = None, late: int | None = None) -> Figure:
    """The in-context-learning score over training (negative = in-context learning)."""
    fig, axes = new_figure(1, 1, width=7.0, height=3.4)
    ax = axes[0, 0]
    _shade_window(ax, window)
    ax.axhline(0, color="black", lw=0.8)
    ax.plot(to_numpy(steps), to_numpy(icl), color="tab:blue", lw=2, label="2 layers")
    if control_icl is not None:
        ax.plot(to_numpy(steps), to_numpy(control_icl), color="tab:red", ls="--", label="1 layer")
    where = f" (loss at token {late} minus loss at token {early})" if early is not None and late is not None else ""
    ax.set_title("In-context-learning score" + where, fontsize=10)
    ax.set_xlabel("training step")
    ax.set_ylabel("ICL score (nats; < 0 = learns in context)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def loss_by_position_image(steps, loss_by_position, *, window=None) -> Figure:
    """Per-token loss by context position (x) over training (y), as an image.

    Args:
        loss_by_position: ``(n_checkpoints, seq - 1)`` mean loss at each position.
    """
    v = to_numpy(loss_by_position)
    s = to_numpy(steps)
    fig, axes = new_figure(1, 1, width=7.0, height=4.0)
    ax = axes[0, 0]
    # rows are checkpoints: draw each as a band between neighbouring steps so uneven spacing shows
    edges = np.concatenate([[s[0]], (s[1:] + s[:-1]) / 2, [s[-1]]])
    im = ax.pcolormesh(np.arange(v.shape[1] + 1) - 0.5, edges, v, cmap="viridis", shading="flat")
    fig.colorbar(im, ax=ax, label="loss (nats)")
    if window is not None:
        for y in window:
            ax.axhline(y, color="white", ls="--", lw=1)
    ax.set_xlabel("context position of the predicted token")
    ax.set_ylabel("training step")
    ax.set_title("Per-token loss by position: late tokens become easy at the phase change", fontsize=10)
    fig.tight_layout()
    return fig


def loss_pca_trajectory(coords, steps, *, window=None, explained=None, control_coords=None) -> Figure:
    """The training trajectory in the plane of the top two principal components of per-token loss.

    Args:
        coords: ``(n_checkpoints, 2)``. steps: ``(n_checkpoints,)``. window: ``(start, end)`` marked in gold.
        control_coords: ``(n_checkpoints, 2)`` the one-layer control, drawn as a dashed red line.
    """
    c = to_numpy(coords)
    s = to_numpy(steps)
    fig, axes = new_figure(1, 1, width=5.6, height=4.4)
    ax = axes[0, 0]
    if control_coords is not None:
        cc = to_numpy(control_coords)
        ax.plot(cc[:, 0], cc[:, 1], color="tab:red", ls="--", lw=1.2, label="1 layer")
    ax.plot(c[:, 0], c[:, 1], color="lightgray", lw=1, zorder=1)
    sc = ax.scatter(c[:, 0], c[:, 1], c=s, cmap="viridis", s=22, zorder=2)
    fig.colorbar(sc, ax=ax, label="training step")
    if window is not None:
        inside = (s >= window[0]) & (s <= window[1])
        ax.scatter(c[inside, 0], c[inside, 1], facecolors="none", edgecolors="gold", s=90, lw=2, zorder=3, label="2 layers: phase change")
    if window is not None or control_coords is not None:
        ax.legend(fontsize=8)
    ax.annotate("start", c[0], fontsize=8)
    ax.annotate("end", c[-1], fontsize=8)
    lab = ["PC 1", "PC 2"]
    if explained is not None:
        e = to_numpy(explained)
        lab = [f"PC {i + 1} ({100 * e[i]:.0f}% of variance)" for i in range(2)]
    ax.set_xlabel(lab[0])
    ax.set_ylabel(lab[1])
    ax.set_title("Per-token-loss PCA: the trajectory turns at the phase change", fontsize=10)
    fig.tight_layout()
    return fig


def head_scores_over_training(steps, scores: dict, *, window=None) -> Figure:
    """Heatmaps, heads (rows) x checkpoints (columns), one panel per score.

    Args:
        scores: name -> ``(n_checkpoints, n_layers, n_heads)``.
    """
    names = list(scores)
    s = to_numpy(steps)
    fig, axes = new_figure(len(names), 1, width=4.6, height=3.4)
    for ax, name in zip(axes[0], names):
        v = to_numpy(scores[name])
        n, layers, heads = v.shape
        grid = v.reshape(n, layers * heads).T
        lo = -1.0 if grid.min() < 0 else 0.0
        im = ax.imshow(grid, aspect="auto", cmap="RdBu_r" if lo < 0 else "viridis", vmin=lo, vmax=1.0, interpolation="nearest",
                       extent=(-0.5, n - 0.5, layers * heads - 0.5, -0.5))
        ax.set_yticks(range(layers * heads), [f"L{l}H{h}" for l in range(layers) for h in range(heads)], fontsize=7)
        ticks = np.linspace(0, n - 1, min(n, 5)).round().astype(int)
        ax.set_xticks(ticks, [f"{int(s[t])}" for t in ticks], fontsize=7)
        if window is not None:
            inside = np.nonzero((s >= window[0]) & (s <= window[1]))[0]
            for edge in (inside[0] - 0.5, inside[-1] + 0.5) if len(inside) else ():
                ax.axvline(edge, color="orange", ls="--", lw=1.2)
        ax.set_xlabel("training step")
        ax.set_title(name, fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle("Head scores over training (L = layer, H = head)", fontsize=11)
    fig.tight_layout()
    return fig


def induction_head_classifier(models: dict, threshold: float) -> Figure:
    """Prefix matching (x) vs. copying (y) for every head of several models, with the induction-head region.

    Args:
        models: model name -> ``{"prefix matching": (layers, heads), "copying": (layers, heads)}``.
    """
    fig, axes = new_figure(1, 1, width=6.4, height=4.4)
    ax = axes[0, 0]
    ax.axvspan(threshold, 1.02, ymin=0.5, ymax=1.0, color="tab:green", alpha=0.12, label="induction head region")
    ax.axvline(threshold, color="tab:green", ls="--", lw=1)
    ax.axhline(0, color="black", lw=0.8)
    markers = ["o", "s", "^", "D"]
    for (name, sc), marker in zip(models.items(), markers):
        p, c = to_numpy(sc["prefix matching"]), to_numpy(sc["copying"])
        pts = ax.scatter(p.ravel(), c.ravel(), marker=marker, s=45, label=name, alpha=0.85)
        layers, heads = p.shape
        for l in range(layers):
            for h in range(heads):
                ax.annotate(f"L{l}H{h}", (p[l, h], c[l, h]), fontsize=6, xytext=(3, 3), textcoords="offset points", color=pts.get_facecolor()[0])
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("prefix-matching score")
    ax.set_ylabel("copying score")
    ax.set_title("Induction head = high prefix matching and positive copying", fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def attention_pattern(pattern, tokens=None, *, title: str = "", ax=None) -> Figure:
    """One head's attention pattern ``(query, key)`` as an image (rows: from, columns: to)."""
    v = to_numpy(pattern)
    if ax is None:
        fig, axes = new_figure(1, 1, width=4.6, height=4.2)
        ax = axes[0, 0]
    else:
        fig = ax.figure
    ax.imshow(v, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    if tokens is not None and len(tokens) <= 16:
        labels = ["BOS" if int(t) == 0 else str(int(t)) for t in to_numpy(tokens)]
        ax.set_xticks(range(len(labels)), labels, fontsize=4, rotation=90)
        ax.set_yticks(range(len(labels)), labels, fontsize=4)
    ax.set_xlabel("attends to (key)")
    ax.set_ylabel("from (query)")
    ax.set_title(title, fontsize=9)
    return fig


def attention_before_during_after(patterns, labels, tokens=None, *, head_name: str = "") -> Figure:
    """One head's attention pattern at several checkpoints side by side (the explorer's static twin)."""
    fig, axes = new_figure(len(patterns), 1, width=3.2, height=3.3)
    for ax, p, label in zip(axes[0], patterns, labels):
        attention_pattern(p, tokens, title=label, ax=ax)
    fig.suptitle(f"Attention of {head_name} on a repeated random sequence" if head_name else "Attention on a repeated random sequence", fontsize=10)
    fig.tight_layout()
    return fig


def loss_along_sequence(loss, *, period: int | None = None, vocab: int | None = None, title: str = "") -> Figure:
    """Per-token loss along a sequence (mean over samples), marking where the repeat starts."""
    v = to_numpy(loss)
    fig, axes = new_figure(1, 1, width=7.0, height=3.2)
    ax = axes[0, 0]
    ax.plot(np.arange(1, len(v) + 1), v, marker="o", ms=3, color="tab:blue", label="loss of predicting this token")
    if vocab is not None:
        ax.axhline(np.log(vocab), color="black", ls=":", lw=0.8, label="chance, log(vocab)")
    if period is not None:
        ax.axvline(period + 1.5, color="tab:green", ls="--", lw=1, label="current token seen before")
    ax.set_xlabel("position of the predicted token")
    ax.set_ylabel("loss (nats)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def circuit_matrices(matrices: dict, *, title: str = "", xlabels: dict | None = None, ylabels: dict | None = None) -> Figure:
    """Signed heatmaps of a few circuit matrices side by side (e.g. a head's QK and OV circuits).

    Args:
        matrices: panel title -> 2-D array. xlabels, ylabels: panel title -> axis label.
    """
    fig, axes = new_figure(len(matrices), 1, width=4.2, height=3.8)
    for ax, (name, m) in zip(axes[0], matrices.items()):
        signed_heatmap(ax, m, title=name, xlabel=(xlabels or {}).get(name, ""), ylabel=(ylabels or {}).get(name, ""))
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
