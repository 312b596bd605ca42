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


def new_figure(
    ncols: int = 1, nrows: int = 1, width: float = 5.0, height: float = 3.6, **kwargs
) -> tuple[Figure, np.ndarray]:
    """A figure with a grid of axes (always returned as a 2-D array), sized per panel."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kwargs)
    return fig, axes


# ---------------------------------------------------------------------------------------------
# Out-of-context reasoning (chapters 1-4)
# ---------------------------------------------------------------------------------------------

OCR_KIND_COLOURS = {
    "noise": "#d9d9d9",
    "subject": "#4c78a8",
    "relation": "#54a24b",
    "EOS": "#222222",
    "fact value": "#f58518",
    "implication value": "#e45756",
}
"""One colour per token kind of the symbolic OCR task, shared by every OCR figure."""


def ocr_split(
    fact_index,
    is_train,
    fact_labels: list[str],
    *,
    pair_of=None,
    pair_names: list[str] | None = None,
    title: str = "Who has which fact, and whose implication is seen in training",
) -> Figure:
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
    ax.legend(
        handles=[
            Patch(color=colours[2], label="fact and implication in training"),
            Patch(color=colours[1], label="fact in training, implication held out (test)"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.06 if pair_of is None else -0.04),
        ncol=2,
        frameon=False,
        fontsize=8,
    )
    fig.tight_layout()
    return fig


def ocr_token_layout(
    tokens: list[str],
    kinds: list[str],
    answer: str,
    *,
    kind_grid=None,
    kind_names: tuple[str, ...] = ("noise", "subject", "relation", "EOS"),
    title: str = "One training sequence, position by position",
) -> Figure:
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
        raise ValueError(
            f"kinds must name one kind of {sorted(OCR_KIND_COLOURS)} per token; got unknown {unknown}, "
            f"{len(kinds)} kinds for {len(tokens)} tokens"
        )
    T = len(tokens)
    rows = 1 if kind_grid is None else 2
    fig, axes = plt.subplots(
        rows,
        1,
        figsize=(0.62 * (T + 2) + 1, 2.6 if rows == 1 else 5.4),
        squeeze=False,
        gridspec_kw={"height_ratios": [1.3, 1][:rows]},
    )
    ax = axes[0, 0]
    for t, (name, kind) in enumerate(zip(tokens, kinds)):
        ax.add_patch(Rectangle((t, 0), 0.92, 1, color=OCR_KIND_COLOURS[kind]))
        ax.text(
            t + 0.46,
            0.5,
            name,
            rotation=90,
            ha="center",
            va="center",
            fontsize=7,
            color="white" if kind in ("EOS", "subject") else "black",
        )
        ax.text(t + 0.46, -0.12, str(t), ha="center", va="top", fontsize=7)
    ax.add_patch(
        Rectangle(
            (T + 0.9, 0), 0.92, 1, facecolor="white", edgecolor=OCR_KIND_COLOURS["implication value"], lw=2, ls="--"
        )
    )
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
        ax2.imshow(
            grid,
            cmap=ListedColormap([OCR_KIND_COLOURS[k] for k in kind_names]),
            vmin=-0.5,
            vmax=len(kind_names) - 0.5,
            aspect="auto",
            interpolation="nearest",
            extent=(0, T, grid.shape[0], 0),
        )
        ax2.set_xlim(-0.2, T + 2.0)
        ax2.set_xticks(np.arange(T) + 0.5, [str(t) for t in range(T)], fontsize=7)
        ax2.set_xlabel("position")
        ax2.set_ylabel("sequence")
        ax2.set_title(f"Kinds of token in {grid.shape[0]} sampled sequences", fontsize=10)
        ax2.legend(
            handles=[Patch(color=OCR_KIND_COLOURS[k], label=k) for k in kind_names],
            loc="center left",
            bbox_to_anchor=(T / (T + 2.2), 0.5),
            frameon=False,
            fontsize=8,
        )
        for side in ("top", "right"):
            ax2.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


# --- chapters 2-3: the one-layer factorized and merged models ---------------------------------

OCR_ARM_COLOURS = {"factorized": "#1f77b4", "merged": "#d62728"}
"""Colour of each parameterization in every figure of chapters 2-3."""


def _band(ax, x, values, colour, label, ls="-"):
    """Mean line with a min-max band over the first axis (seeds) of ``values (S, K)``."""
    v = to_numpy(values)
    ax.plot(x, v.mean(0), color=colour, ls=ls, label=label)
    if v.shape[0] > 1:
        ax.fill_between(x, v.min(0), v.max(0), color=colour, alpha=0.2, lw=0)


def ocr_loss_curves(
    steps,
    curves: dict[str, dict[str, object]],
    *,
    chance: float | None = None,
    title: str = "Train and test loss, mean and range over seeds",
) -> Figure:
    """Train (dashed) and test (solid) loss over training for each parameterization.

    Args:
        steps: ``(K,)`` steps at which the losses were measured.
        curves: arm name -> ``{"train": (S, K), "test": (S, K)}`` losses of ``S`` seeds.
        chance: draw a horizontal line at this loss (e.g. ``log(number of implications)``).
    """
    fig, axes = new_figure(width=6.5, height=4.0)
    ax = axes[0, 0]
    x = to_numpy(steps)
    for arm, c in curves.items():
        colour = OCR_ARM_COLOURS.get(arm, None)
        _band(ax, x, c["train"], colour, f"{arm}: train", ls="--")
        _band(ax, x, c["test"], colour, f"{arm}: test (held-out implications)")
    if chance is not None:
        ax.axhline(chance, color="grey", lw=0.8, ls=":")
        ax.text(
            x[-1],
            chance,
            f"log {round(np.exp(chance))} = {chance:.2f}",
            ha="right",
            va="bottom",
            fontsize=8,
            color="grey",
        )
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ocr_ov_blocks(
    blocks: dict[str, object],
    train_columns,
    *,
    ylabel: str = "implication value",
    xlabel: str = "subject (grouped by fact value; ▼ = implication seen in training)",
    title: str = "",
    ncols: int | None = None,
) -> Figure:
    """Heatmaps of output-value blocks (rows: answer values, columns: subjects), one panel per entry.

    Args:
        blocks: panel title -> ``(rows, n_subjects)`` matrix, columns already in display order.
        train_columns: column indices to mark as training subjects.
    """
    ncols = ncols or len(blocks)
    nrows = -(-len(blocks) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=5.2, height=3.2)
    marks = to_numpy(train_columns).astype(int)
    for ax, (name, block) in zip(axes.flat, blocks.items()):
        signed_heatmap(ax, block, title=name, xlabel=xlabel, ylabel=ylabel)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.plot(marks, np.full(len(marks), -0.9), "v", color="black", ms=3, clip_on=False)
        ax.xaxis.label.set_fontsize(8)
    for ax in list(axes.flat)[len(blocks) :]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def ocr_rank_sweep(
    ranks,
    test_losses,
    *,
    chance: float | None = None,
    train_losses=None,
    title: str = "Test loss of the factorized model against its rank",
) -> Figure:
    """Test loss on held-out implications for every rank ``r`` of ``W_O, W_V``.

    Args:
        ranks: ``(R,)``; test_losses, train_losses: ``(R, S)`` losses of ``S`` seeds per rank.
    """
    fig, axes = new_figure(width=6.0, height=3.8)
    ax = axes[0, 0]
    r, v = to_numpy(ranks), to_numpy(test_losses)
    ax.errorbar(
        r,
        v.mean(1),
        yerr=[v.mean(1) - v.min(1), v.max(1) - v.mean(1)],
        marker="o",
        capsize=3,
        color=OCR_ARM_COLOURS["factorized"],
        label="test (held-out implications)",
    )
    if train_losses is not None:
        ax.plot(r, to_numpy(train_losses).mean(1), "s--", color="grey", ms=4, label="train")
    if chance is not None:
        ax.axhline(chance, color="grey", lw=0.8, ls=":", label=f"log {round(np.exp(chance))} (merged model's floor)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(r, [str(int(k)) for k in r])
    ax.set_yscale("log")
    ax.set_xlabel("rank r of the factorized output-value map")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ocr_pair_losses(
    pair_names: list[str],
    losses: dict[str, object],
    *,
    floors=None,
    title: str = "Test loss on held-out implications, per relation pair",
) -> Figure:
    """Grouped bars: one group per relation pair, one bar per parameterization (mean, with seed range).

    Args:
        losses: arm -> ``(S, P)`` test losses of ``S`` seeds on ``P`` pairs.
        floors: ``(P,)`` optional per-pair reference (e.g. log of the number of implication values), drawn as ticks.
    """
    fig, axes = new_figure(width=8.0, height=3.8)
    ax = axes[0, 0]
    P, width = len(pair_names), 0.8 / len(losses)
    for k, (arm, value) in enumerate(losses.items()):
        v = to_numpy(value)
        x = np.arange(P) + (k - (len(losses) - 1) / 2) * width
        ax.bar(
            x,
            v.mean(0),
            width,
            color=OCR_ARM_COLOURS.get(arm),
            label=arm,
            yerr=[v.mean(0) - v.min(0), v.max(0) - v.mean(0)],
            capsize=3,
        )
    if floors is not None:
        f = to_numpy(floors)
        ax.hlines(f, np.arange(P) - 0.45, np.arange(P) + 0.45, color="grey", ls=":", label="log(values per pair)")
    ax.set_xticks(range(P), [n.replace(" (", "\n(") for n in pair_names], fontsize=8)
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ocr_spectra(
    spectra: dict[str, object],
    *,
    top: int | None = 60,
    title: str = "Singular values of the output-value map (largest = 1)",
) -> Figure:
    """Singular values, normalized by the largest, of several matrices on one log-scale plot."""
    fig, axes = new_figure(width=6.0, height=3.8)
    ax = axes[0, 0]
    for name, s in spectra.items():
        v = to_numpy(s)[:top]
        arm = next((a for a in OCR_ARM_COLOURS if a in name), None)
        ax.plot(
            np.arange(1, len(v) + 1),
            v / v[0],
            "o-" if "trained" in name else "--",
            ms=3,
            label=name,
            color=OCR_ARM_COLOURS.get(arm) if arm else None,
            alpha=1.0 if "trained" in name else 0.7,
        )
    ax.set_yscale("log")
    ax.set_xlabel("index of singular value")
    ax.set_ylabel("singular value / largest")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ocr_mean_rank(
    runs: dict[str, dict[str, list[float]]],
    chance: dict[str, float],
    *,
    reference: dict[str, list[float]] | None = None,
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
    Lower is better; 0 means the correct answer is always ranked first.
    """
    if not runs:
        raise ValueError("runs is empty: nothing to plot")
    pairs = list(next(iter(runs.values())))
    if any(list(r) != pairs for r in runs.values()) or not set(pairs) <= set(chance):
        raise ValueError(f"every run and chance must name the same pairs {pairs}")
    if reference is not None and any(len(v) != len(pairs) for v in reference.values()):
        raise ValueError(f"every reference row needs one value per pair ({len(pairs)})")
    fig, axes = new_figure(
        ncols=1 if reference is None else 2, width=max(6.0, 1.5 * len(pairs)), height=4.0, sharey=True
    )
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
        ax.hlines(
            chance[p],
            i - 0.45,
            i + 0.45,
            colors="black",
            linestyles="dashed",
            zorder=4,
            label="chance (random order)" if i == 0 else None,
        )
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("mean rank (0 = best)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    if reference is not None:
        ax = axes[0, 1]
        width = 0.8 / len(reference)
        for j, (label, values) in enumerate(reference.items()):
            ax.bar(
                x - 0.4 + width * (j + 0.5),
                values,
                width * 0.9,
                color=colours[(j + len(runs)) % len(colours)],
                label=label,
            )
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_title(reference_title, fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------


def _shade_window(ax, window, label: str = "phase change") -> None:
    if window is not None:
        ax.axvspan(window[0], window[1], color="gold", alpha=0.3, label=label)


def phase_change_curves(
    steps, repeated, other, *, window=None, control_repeated=None, vocab: int | None = None
) -> Figure:
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


def icl_score_curve(
    steps, icl, *, window=None, control_icl=None, early: int | None = None, late: int | None = None
) -> Figure:
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
        im = ax.imshow(
            grid,
            aspect="auto",
            cmap="RdBu_r" if lo < 0 else "viridis",
            vmin=lo,
            vmax=1.0,
            interpolation="nearest",
            extent=(-0.5, n - 0.5, layers * heads - 0.5, -0.5),
        )
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
                ax.annotate(
                    f"L{l}H{h}",
                    (p[l, h], c[l, h]),
                    fontsize=6,
                    xytext=(3, 3),
                    textcoords="offset points",
                    color=pts.get_facecolor()[0],
                )
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
    fig.suptitle(
        f"Attention of {head_name} on a repeated random sequence"
        if head_name
        else "Attention on a repeated random sequence",
        fontsize=10,
    )
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


def circuit_matrices(
    matrices: dict, *, title: str = "", xlabels: dict | None = None, ylabels: dict | None = None
) -> Figure:
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


# --- chapter 6: smeared keys ------------------------------------------------------------------

SMEAR_ARM_COLOURS = {
    "1 layer": "tab:red",
    "1 layer, smeared": "tab:orange",
    "2 layers": "tab:blue",
    "2 layers, smeared": "tab:green",
}
"""Colour of each arm in the figures of chapter 6."""


def arm_loss_curves(
    steps,
    curves: dict,
    *,
    threshold: float | None = None,
    phase_steps: dict | None = None,
    vocab: int | None = None,
    title: str = "Loss on repeated tokens, mean and range over seeds",
) -> Figure:
    """Several arms' losses over training: mean line and min-max band over seeds, with phase-change marks.

    Args:
        steps: ``(K,)`` checkpoint steps.
        curves: arm name -> ``(S, K)`` losses of ``S`` seeds.
        threshold: the loss that defines the phase change (horizontal line).
        phase_steps: arm name -> list of each seed's phase-change step (``None`` = never); the mean is
            marked with a vertical line in the arm's colour.
        vocab: draws the chance level ``log(vocab)``.
    """
    fig, axes = new_figure(1, 1, width=7.2, height=4.0)
    ax = axes[0, 0]
    x = to_numpy(steps)
    for arm, values in curves.items():
        colour = SMEAR_ARM_COLOURS.get(arm)
        _band(ax, x, values, colour, arm, ls="--" if "smeared" not in arm else "-")
        reached = [s for s in (phase_steps or {}).get(arm, []) if s is not None]
        if reached:
            ax.axvline(np.mean(reached), color=colour, lw=1, ls=":")
    if threshold is not None:
        ax.axhline(threshold, color="black", lw=0.8, ls="-.", label=f"phase-change threshold ({threshold:g} nat)")
    if vocab is not None:
        ax.axhline(np.log(vocab), color="grey", lw=0.8, ls=":", label="chance, log(vocab)")
    ax.set_xlabel("training step (dotted verticals: mean phase-change step)")
    ax.set_ylabel("loss on repeated tokens (nats)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def smear_sigma_over_training(steps, sigma, *, highlight=None, mark: int | None = None, title: str = "") -> Figure:
    """The learned weight of the current key, ``sigmoid(alpha)``, of every head over training; one panel per layer.

    Args:
        steps: ``(K,)`` checkpoint steps. sigma: ``(K, layers, heads)``.
        highlight: ``(layer, head)`` pairs drawn thick (e.g. the induction heads).
        mark: a step to mark with a vertical line (e.g. the phase change).
    """
    s = to_numpy(sigma)
    _, layers, heads = s.shape
    fig, axes = new_figure(layers, 1, width=4.4, height=3.4, sharey=True)
    x = to_numpy(steps)
    strong = set(map(tuple, highlight or []))
    for layer, ax in enumerate(axes[0]):
        ax.axhline(0.5, color="grey", lw=0.8, ls=":", label="start, 0.5")
        if mark is not None:
            ax.axvline(mark, color="black", lw=0.8, ls="-.", label=f"phase change (step {mark})")
        for h in range(heads):
            thick = (layer, h) in strong
            ax.plot(
                x, s[:, layer, h], lw=2.2 if thick else 1.0, label=f"L{layer}H{h}" + (" (induction)" if thick else "")
            )
        ax.set_ylim(0, 1)
        ax.set_xlabel("training step")
        ax.set_title(f"layer {layer}", fontsize=9)
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("σ(α): weight of the current key\n(1 = plain key, 0 = previous key)")
    fig.suptitle(title or "What each head learns to put in its keys", fontsize=10)
    fig.tight_layout()
    return fig


# --- chapter 7: ablation -------------------------------------------------------------------------

ABLATION_COLOURS = {"full": "tab:red", "pattern-preserving": "tab:blue"}


def ablation_effects(names: list[str], panels: dict[str, dict[str, object]], *, title: str = "") -> Figure:
    """Grouped bars, one group per ablation and one bar per ablation kind, in stacked panels.

    Args:
        names: ``n`` ablation labels (e.g. ``"L1H2"``, ``"all of layer 1"``).
        panels: panel y-label -> kind -> ``(n,)`` values, e.g. ``{"share of ICL score removed": {"full": ..., ...}}``.
    """
    fig, axes = new_figure(1, len(panels), width=max(7.0, 0.62 * len(names)), height=2.5, sharex=True)
    x = np.arange(len(names))
    for ax, (label, by_kind) in zip(axes[:, 0], panels.items()):
        width = 0.8 / len(by_kind)
        for j, (kind, values) in enumerate(by_kind.items()):
            ax.bar(
                x - 0.4 + width * (j + 0.5),
                to_numpy(values),
                width * 0.92,
                color=ABLATION_COLOURS.get(kind),
                label=kind,
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, title="ablation", title_fontsize=8)
    axes[-1, 0].set_xticks(x, names, fontsize=8, rotation=30, ha="right")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def ablation_over_training(steps, change: dict[str, object], row_names: list[str], *, window=None) -> Figure:
    """Heatmaps, heads (rows) x checkpoints (columns), of how much removing a head raises the ICL score.

    Args:
        steps: ``(n_checkpoints,)``. change: kind -> ``(n_checkpoints, n_rows)`` ICL score with the head
            removed minus without (nats; positive = in-context learning lost). One colour scale for all panels.
        window: ``(start, end)`` steps of the phase change, marked with dashed lines.
    """
    s = to_numpy(steps)
    grids = {kind: to_numpy(v).T for kind, v in change.items()}
    vmax = max(float(np.abs(g).max()) for g in grids.values()) or 1.0
    fig, axes = new_figure(len(grids), 1, width=5.2, height=0.32 * len(row_names) + 1.6)
    edges = np.concatenate([[s[0] - (s[1] - s[0]) / 2], (s[1:] + s[:-1]) / 2, [s[-1] + (s[-1] - s[-2]) / 2]])
    for ax, (kind, grid) in zip(axes[0], grids.items()):
        im = ax.pcolormesh(
            edges, np.arange(len(row_names) + 1) - 0.5, grid, cmap="RdBu_r", vmin=-vmax, vmax=vmax, shading="flat"
        )
        ax.set_yticks(range(len(row_names)), row_names, fontsize=8)
        ax.invert_yaxis()
        if window is not None:
            for edge in window:
                ax.axvline(edge, color="black", ls="--", lw=1)
        ax.set_xlabel("training step")
        ax.set_title(f"{kind} ablation", fontsize=10)
    fig.colorbar(im, ax=list(axes[0]), label="ICL score change (nats; > 0 = ICL lost)", fraction=0.046, pad=0.04)
    fig.suptitle("Removing one head at a time, at every checkpoint", fontsize=11)
    return fig


def icl_with_heads_removed(
    steps, curves: dict[str, object], *, window=None, styles: dict[str, dict] | None = None
) -> Figure:
    """The ICL score over training, for the intact model and with groups of heads removed.

    Args:
        curves: label -> ``(n_checkpoints,)`` ICL scores (negative = in-context learning).
        styles: label -> keyword arguments of ``Axes.plot``.
    """
    fig, axes = new_figure(1, 1, width=7.0, height=3.6)
    ax = axes[0, 0]
    _shade_window(ax, window)
    ax.axhline(0, color="black", lw=0.8)
    for label, values in curves.items():
        ax.plot(to_numpy(steps), to_numpy(values), label=label, **(styles or {}).get(label, {}))
    ax.set_xlabel("training step")
    ax.set_ylabel("ICL score (nats; < 0 = learns in context)")
    ax.set_title("In-context learning with groups of heads removed", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ablated_loss_along_sequence(clean, ablated, *, period: int | None = None, title: str = "", ax=None) -> Figure:
    """Per-token loss along one sequence, intact and with a head removed; the gap between them shaded.

    Args:
        clean, ablated: ``(seq - 1,)`` per-token losses (entry ``p`` predicts token ``p + 1``).
        period: the sequence's repeat period; a line marks where the current token has been seen before.
    """
    c, a = to_numpy(clean), to_numpy(ablated)
    if ax is None:
        fig, axes = new_figure(1, 1, width=7.0, height=3.2)
        ax = axes[0, 0]
    else:
        fig = ax.figure
    x = np.arange(1, len(c) + 1)
    ax.fill_between(x, c, a, where=a >= c, color="tab:red", alpha=0.25, label="loss added by the ablation", step=None)
    ax.fill_between(x, c, a, where=a < c, color="tab:green", alpha=0.25, label="loss removed by the ablation")
    ax.plot(x, c, color="black", lw=1.2, marker="o", ms=2.5, label="intact")
    ax.plot(x, a, color="tab:red", lw=1.2, marker="o", ms=2.5, label="head removed")
    if period is not None:
        ax.axvline(period + 1.5, color="tab:green", ls="--", lw=1, label="current token seen before")
    ax.set_xlabel("position of the predicted token")
    ax.set_ylabel("loss (nats)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return fig


def ablated_loss_grid(panels: list[tuple[object, object, str]], *, period: int | None = None, ncols: int = 2) -> Figure:
    """Several :func:`ablated_loss_along_sequence` panels (clean, ablated, title) in a grid (the explorer's static twin)."""
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(ncols, nrows, width=5.0, height=2.8, sharey=True)
    for ax, (clean, ablated, title) in zip(axes.flat, panels):
        ablated_loss_along_sequence(clean, ablated, period=period, title=title, ax=ax)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    for ax in list(axes.flat)[1:]:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.tight_layout()
    return fig
