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

OCR_KIND_COLOURS = {
    "noise": "#d9d9d9", "subject": "#4c78a8", "relation": "#54a24b", "EOS": "#222222",
    "fact value": "#f58518", "implication value": "#e45756",
}
"""One colour per token kind of the symbolic OCR task, shared by every OCR figure."""


def ocr_split(fact_index, is_train, fact_labels: list[str], *, pair_of=None, pair_names: list[str] | None = None,
              title: str = "Who has which fact, and whose implication is seen in training") -> Figure:
    """The OCR split as a grid: one column per subject, one row per fact value.

    Args:
        fact_index: ``(n_subjects,)`` int, row (0-based index into ``fact_labels``) of each subject's fact.
        is_train: ``(n_subjects,)`` bool, True where the subject's implication is in training.
        fact_labels: name of each fact value (row label), e.g. ``"b3 -> c3"``.
        pair_of: ``(n_subjects,)`` int relation pair of each subject, to draw a band per pair.
        pair_names: label of each pair.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    fact = np.asarray(to_numpy(fact_index), dtype=int)
    train = np.asarray(to_numpy(is_train), dtype=bool)
    n_facts, n = len(fact_labels), len(fact)
    order = np.lexsort((~train, fact))  # columns grouped by fact value, the training subject first
    grid = np.zeros((n_facts, n))
    grid[fact[order], np.arange(n)] = np.where(train[order], 2, 1)
    colours = ["white", "#9ecae1", "#e6550d"]
    fig, axes = new_figure(width=min(14.0, 2.0 + 0.11 * n), height=1.2 + 0.22 * n_facts)
    ax = axes[0, 0]
    ax.imshow(grid, cmap=ListedColormap(colours), vmin=0, vmax=2, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(n_facts), fact_labels, fontsize=8)
    ax.set_xticks([])
    ax.set_xlabel(f"{n} subjects, grouped by fact value")
    ax.set_title(title)
    for row in range(1, n_facts):
        ax.axhline(row - 0.5, color="#eeeeee", lw=0.5)
    if pair_of is not None and pair_names is not None:
        pairs = np.asarray(to_numpy(pair_of), dtype=int)
        rows_of = [sorted(set(fact[pairs == p])) for p in range(len(pair_names))]
        for p, rows in enumerate(rows_of):
            if not rows:
                continue
            ax.axhline(max(rows) + 0.5, color="black", lw=1)
            ax.text(n + 0.5, (min(rows) + max(rows)) / 2, pair_names[p], va="center", fontsize=8)
    ax.legend(handles=[Patch(color=colours[2], label="fact and implication in training"),
                       Patch(color=colours[1], label="fact in training, implication held out (test)")],
              loc="upper center", bbox_to_anchor=(0.5, -0.06 if pair_of is None else -0.04), ncol=2, frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def ocr_token_layout(tokens: list[str], kinds: list[str], answer: str, *, kind_grid=None,
                     kind_names: tuple[str, ...] = ("noise", "subject", "relation", "EOS"),
                     title: str = "One training sequence, position by position") -> Figure:
    """One symbolic sequence as a row of coloured boxes, the answer read at EOS; optionally, below it,
    the kinds of many sequences to show which positions are fixed and which vary.

    Args:
        tokens: ``seq_len`` token names of one sequence.
        kinds: the kind of each token, keys of :data:`OCR_KIND_COLOURS`.
        answer: name of the token to predict at EOS.
        kind_grid: ``(n_sequences, seq_len)`` int, index into ``kind_names`` of each token's kind.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

    unknown = sorted(set(kinds) - OCR_KIND_COLOURS.keys())
    if unknown or len(kinds) != len(tokens):
        raise ValueError(f"kinds must name one kind of {sorted(OCR_KIND_COLOURS)} per token; got unknown {unknown}, "
                         f"{len(kinds)} kinds for {len(tokens)} tokens")
    T = len(tokens)
    rows = 1 if kind_grid is None else 2
    fig, axes = plt.subplots(rows, 1, figsize=(0.62 * (T + 2) + 1, 2.6 if rows == 1 else 5.4), squeeze=False,
                             gridspec_kw={"height_ratios": [1.3, 1][:rows]})
    ax = axes[0, 0]
    for t, (name, kind) in enumerate(zip(tokens, kinds)):
        ax.add_patch(Rectangle((t, 0), 0.92, 1, color=OCR_KIND_COLOURS[kind]))
        ax.text(t + 0.46, 0.5, name, rotation=90, ha="center", va="center", fontsize=7,
                color="white" if kind in ("EOS", "subject") else "black")
        ax.text(t + 0.46, -0.12, str(t), ha="center", va="top", fontsize=7)
    ax.add_patch(Rectangle((T + 0.9, 0), 0.92, 1, facecolor="white", edgecolor=OCR_KIND_COLOURS["implication value"], lw=2, ls="--"))
    ax.text(T + 1.36, 0.5, answer, rotation=90, ha="center", va="center", fontsize=7)
    ax.add_patch(FancyArrowPatch((T - 0.05, 0.5), (T + 0.88, 0.5), arrowstyle="-|>", mutation_scale=10))
    ax.text(T + 1.36, -0.12, "target", ha="center", va="top", fontsize=7)
    ax.set_xlim(-0.2, T + 2.0)
    ax.set_ylim(-0.35, 1.05)
    ax.axis("off")
    ax.set_title(title)
    if kind_grid is not None:
        grid = to_numpy(kind_grid)
        ax2 = axes[1, 0]
        ax2.imshow(grid, cmap=ListedColormap([OCR_KIND_COLOURS[k] for k in kind_names]), vmin=-0.5,
                   vmax=len(kind_names) - 0.5, aspect="auto", interpolation="nearest", extent=(0, T, grid.shape[0], 0))
        ax2.set_xlim(-0.2, T + 2.0)
        ax2.set_xticks(np.arange(T) + 0.5, [str(t) for t in range(T)], fontsize=7)
        ax2.set_xlabel("position")
        ax2.set_ylabel("sequence")
        ax2.set_title(f"Kinds of token in {grid.shape[0]} sampled sequences", fontsize=10)
        ax2.legend(handles=[Patch(color=OCR_KIND_COLOURS[k], label=k) for k in kind_names], loc="center left",
                   bbox_to_anchor=(T / (T + 2.2), 0.5), frameon=False, fontsize=8)
        for side in ("top", "right"):
            ax2.spines[side].set_visible(False)
    fig.tight_layout()
    return fig



def ocr_mean_rank(runs: dict[str, dict[str, list[float]]], chance: dict[str, float], *,
                  reference: dict[str, list[float]] | None = None, reference_title: str = "as reported",
                  title: str = "Mean rank of the correct implication, held-out subjects") -> Figure:
    """Mean rank per relation pair: a group of bars per pair, one bar per run (e.g. before / after fine-tuning).

    Args:
        runs: run label -> (pair name -> one mean rank per seed). Every run names the same pairs.
        chance: pair name -> mean rank of a random ordering, ``(k - 1) / 2``; drawn as a dashed line.
        reference: optional second panel, e.g. published results: model name -> one mean rank per pair
            (in the order of ``runs``' pairs), drawn on the same scale.
        reference_title: title of the second panel.

    A bar is the mean over seeds, its whisker spans the lowest to the highest seed, dots are single seeds.
    Lower is better; 0 means the correct answer is always ranked first.
    """
    if not runs:
        raise ValueError("runs is empty: nothing to plot")
    pairs = list(next(iter(runs.values())))
    if any(list(r) != pairs for r in runs.values()) or not set(pairs) <= set(chance):
        raise ValueError(f"every run and chance must name the same pairs {pairs}")
    if reference is not None and any(len(v) != len(pairs) for v in reference.values()):
        raise ValueError(f"every reference row needs one value per pair ({len(pairs)})")
    fig, axes = new_figure(ncols=1 if reference is None else 2, width=max(6.0, 1.5 * len(pairs)), height=4.0, sharey=True)
    labels = [p.replace(" -> ", " →\n").replace(" (", "\n(") for p in pairs]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    x = np.arange(len(pairs))
    ax = axes[0, 0]
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
    for i, p in enumerate(pairs):
        ax.hlines(chance[p], i - 0.45, i + 0.45, colors="black", linestyles="dashed", zorder=4,
                  label="chance (random order)" if i == 0 else None)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("mean rank (0 = best)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    if reference is not None:
        ax = axes[0, 1]
        width = 0.8 / len(reference)
        for j, (label, values) in enumerate(reference.items()):
            ax.bar(x - 0.4 + width * (j + 0.5), values, width * 0.9, color=colours[(j + len(runs)) % len(colours)], label=label)
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_title(reference_title, fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------
