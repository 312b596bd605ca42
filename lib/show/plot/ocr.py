"""Figures of out-of-context reasoning (chapters 1-4): the task, the one-layer models, the language models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle

from lib.show._common import (
    MAX_COLUMNS,
    MAX_WIDTH,
    MIN_FONT,
    Array,
    band,
    colorbar_beside,
    finish_axis,
    finish_figure,
    legend_below,
    new_figure,
    signed_heatmap,
    symmetric_bound,
    to_numpy,
)

OCR_KIND_COLOURS = {
    "noise": "#d9d9d9",
    "subject": "#4c78a8",
    "relation": "#54a24b",
    "EOS": "#222222",
    "fact value": "#f58518",
    "implication value": "#e45756",
}
"""One colour per token kind of the symbolic OCR task, shared by every OCR figure."""

OCR_ARM_COLOURS = {"factorized": "#1f77b4", "merged": "#d62728"}
"""Colour of each parameterization in every figure of chapters 2-3."""

_CROSS_ENTROPY = "cross-entropy (nats)"


_SPLIT_COLOURS = {"train": "#e6550d", "test": "#9ecae1"}
"""Colours of training and test subjects, in :func:`ocr_split` and :func:`ocr_training_draw`."""


def ocr_split(
    fact_index: Array,
    is_train: Array,
    fact_labels: Sequence[str],
    *,
    pair_of: Array | None = None,
    pair_names: Sequence[str] | None = None,
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
    fact = np.asarray(to_numpy(fact_index), dtype=int)
    train = np.asarray(to_numpy(is_train), dtype=bool)
    n_facts, n = len(fact_labels), len(fact)
    order = np.lexsort((~train, fact))  # columns grouped by fact value, the training subject first
    grid = np.zeros((n_facts, n))
    grid[fact[order], np.arange(n)] = np.where(train[order], 2, 1)
    colours = ["white", _SPLIT_COLOURS["test"], _SPLIT_COLOURS["train"]]
    fig, axes = new_figure(width=min(14.0, 2.0 + 0.11 * n), height=1.2 + 0.22 * n_facts)
    ax: Axes = axes[0, 0]
    ax.imshow(grid, cmap=ListedColormap(colours), vmin=0, vmax=2, aspect="auto", interpolation="nearest")
    ax.set_yticks(range(n_facts), fact_labels, fontsize=MIN_FONT)
    ax.set_xticks([])
    finish_axis(ax, xlabel=f"{n} subjects, grouped by fact value", title=title)
    for row in range(1, n_facts):
        ax.axhline(row - 0.5, color="#eeeeee", lw=0.5)
    if pair_of is not None and pair_names is not None:
        pairs = np.asarray(to_numpy(pair_of), dtype=int)
        for p, name in enumerate(pair_names):
            rows = sorted(set(fact[pairs == p]))
            if rows:
                ax.axhline(max(rows) + 0.5, color="black", lw=1)
                ax.text(n + 0.5, (min(rows) + max(rows)) / 2, name, va="center", fontsize=MIN_FONT)
    ax.legend(
        handles=[
            Patch(color=colours[2], label="fact and implication in training"),
            Patch(color=colours[1], label="fact in training, implication held out (test)"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.06 if pair_of is None else -0.04),
        ncol=2,
        frameon=False,
        fontsize=MIN_FONT,
    )
    return finish_figure(fig)


def ocr_token_layout(
    tokens: Sequence[str],
    kinds: Sequence[str],
    answer: str,
    *,
    kind_grid: Array | None = None,
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
        figsize=(min(MAX_WIDTH, 0.62 * (T + 2) + 1), 2.6 if rows == 1 else 5.4),
        squeeze=False,
        gridspec_kw={"height_ratios": [1.3, 1][:rows]},
    )
    ax: Axes = axes[0, 0]
    for t, (name, kind) in enumerate(zip(tokens, kinds)):
        ax.add_patch(Rectangle((t, 0), 0.92, 1, color=OCR_KIND_COLOURS[kind]))
        ax.text(
            t + 0.46,
            0.5,
            name,
            rotation=90,
            ha="center",
            va="center",
            fontsize=MIN_FONT,
            color="white" if kind in ("EOS", "subject") else "black",
        )
        ax.text(t + 0.46, -0.12, str(t), ha="center", va="top", fontsize=MIN_FONT)
    ax.add_patch(
        Rectangle(
            (T + 0.9, 0), 0.92, 1, facecolor="white", edgecolor=OCR_KIND_COLOURS["implication value"], lw=2, ls="--"
        )
    )
    ax.text(T + 1.36, 0.5, answer, rotation=90, ha="center", va="center", fontsize=MIN_FONT)
    ax.add_patch(FancyArrowPatch((T - 0.05, 0.5), (T + 0.88, 0.5), arrowstyle="-|>", mutation_scale=10))
    ax.text(T + 1.36, -0.12, "target", ha="center", va="top", fontsize=MIN_FONT)
    ax.set_xlim(-0.2, T + 2.0)
    ax.set_ylim(-0.35, 1.05)
    ax.axis("off")
    finish_axis(ax, title=title)
    if kind_grid is not None:
        grid = to_numpy(kind_grid)
        ax2: Axes = axes[1, 0]
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
        ax2.set_xticks(np.arange(T) + 0.5, [str(t) for t in range(T)], fontsize=MIN_FONT)
        finish_axis(
            ax2,
            xlabel="position",
            ylabel="sequence",
            title=f"Kinds of token in {grid.shape[0]} sampled sequences",
            title_size=10,
        )
        ax2.legend(
            handles=[Patch(color=OCR_KIND_COLOURS[k], label=k) for k in kind_names],
            loc="center left",
            bbox_to_anchor=(T / (T + 2.2), 0.5),
            frameon=False,
            fontsize=MIN_FONT,
        )
        for side in ("top", "right"):
            ax2.spines[side].set_visible(False)
    return finish_figure(fig)


def ocr_loss_curves(
    steps: Array,
    curves: Mapping[str, Mapping[str, Array]],
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
    ax: Axes = axes[0, 0]
    x = to_numpy(steps)
    for arm, c in curves.items():
        colour = OCR_ARM_COLOURS.get(arm)
        band(ax, x, c["train"], colour, f"{arm}: train", ls="--")
        band(ax, x, c["test"], colour, f"{arm}: test (held-out implications)")
    if chance is not None:
        ax.axhline(chance, color="grey", lw=0.8, ls=":")
        ax.text(
            x[-1],
            chance,
            f"log {round(np.exp(chance))} = {chance:.2f}",
            ha="right",
            va="bottom",
            fontsize=MIN_FONT,
            color="grey",
        )
    ax.set_yscale("log")
    finish_axis(ax, xlabel="training step", ylabel=_CROSS_ENTROPY, title=title, legend=True)
    return finish_figure(fig)


def ocr_ov_blocks(
    blocks: Mapping[str, Array],
    train_columns: Array,
    *,
    ylabel: str = "implication value",
    xlabel: str = "subject (grouped by fact value;\n▼ = implication seen in training)",
    title: str = "",
    ncols: int | None = None,
    bound: float | None = None,
) -> Figure:
    """Heatmaps of output-value blocks (rows: answer values, columns: subjects), one panel per entry, the panels of a
    row on one colour scale (red/blue, centred at zero) with one colour bar, so that they can be compared by colour.

    Args:
        blocks: panel title -> ``(rows, n_subjects)`` matrix, columns already in display order.
        train_columns: column indices to mark as training subjects.
        ncols: panels a row (default: all in one row); more than :data:`~lib.show._common.MAX_COLUMNS` are
            folded, each row into rows of at most that many, e.g. 2 x 4 panels into 4 x 2. A folded row keeps
            one colour scale, its colour bar shown on each of its lines.
        bound: the colour scale's ``(-bound, bound)`` for every row (e.g. fixed over a slider's frames); default:
            each row's largest ``|value|``.
    """
    asked = ncols or len(blocks)
    # More than MAX_COLUMNS panels a row do not fit the page column: each asked-for row is folded into
    # `split` rows of `per_row` panels, so panels that share a row still come together, in order.
    split = -(-asked // MAX_COLUMNS)
    per_row = -(-asked // split)
    cells = [((i // asked) * split + (i % asked) // per_row, (i % asked) % per_row) for i in range(len(blocks))]
    nrows = max(row for row, _ in cells) + 1
    fig, axes = new_figure(ncols=per_row, nrows=nrows, width=5.2, height=3.2)
    marks = to_numpy(train_columns).astype(int)
    values = [to_numpy(block) for block in blocks.values()]
    bounds = [bound or symmetric_bound(values[i : i + asked]) for i in range(0, len(values), asked)]
    last_in_row = {row: col for row, col in cells}  # cells run left to right: the last one of each row wins
    filled = set(cells)
    for i, ((row, col), name, v) in enumerate(zip(cells, blocks, values)):
        ax: Axes = axes[row, col]
        # axis labels once: the y label on the left column, the x label under the lowest panel of each column
        im = signed_heatmap(
            ax,
            v,
            title=name,
            xlabel="" if (row + 1, col) in filled else xlabel,
            ylabel="" if col else ylabel,
            colorbar=False,
            bound=bounds[i // asked],
        )
        ax.set_xticks([])
        ax.set_yticks([])
        ax.plot(marks, np.full(len(marks), -0.9), "v", color="black", ms=3, clip_on=False)
        ax.xaxis.label.set_fontsize(MIN_FONT)
        if col == last_in_row[row]:
            colorbar_beside(ax, im)
    for ax in set(axes.flat) - {axes[cell] for cell in filled}:
        ax.axis("off")
    return finish_figure(fig, title=title)


def ocr_rank_sweep(
    ranks: Array,
    test_losses: Array,
    *,
    chance: float | None = None,
    train_losses: Array | None = None,
    title: str = "Test loss of the factorized model against its rank",
) -> Figure:
    """Test loss on held-out implications for every rank ``r`` of ``W_O, W_V``.

    Args:
        ranks: ``(R,)``; test_losses, train_losses: ``(R, S)`` losses of ``S`` seeds per rank.
    """
    fig, axes = new_figure(width=6.0, height=3.8)
    ax: Axes = axes[0, 0]
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
    finish_axis(ax, xlabel="rank r of the factorized output-value map", ylabel=_CROSS_ENTROPY, title=title, legend=True)
    return finish_figure(fig)


def ocr_pair_losses(
    pair_names: Sequence[str],
    losses: Mapping[str, Array],
    *,
    floors: Array | None = None,
    title: str = "Test loss on held-out implications, per rule",
) -> Figure:
    """Grouped bars: one group per rule (relation pair), one bar per parameterization (mean, with seed range).

    Args:
        losses: arm -> ``(S, P)`` test losses of ``S`` seeds on ``P`` pairs.
        floors: ``(P,)`` optional per-pair reference (e.g. log of the number of implication values), drawn as ticks.
    """
    fig, axes = new_figure(width=8.0, height=3.8)
    ax: Axes = axes[0, 0]
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
        ax.hlines(f, np.arange(P) - 0.45, np.arange(P) + 0.45, color="grey", ls=":", label="log(mappings per rule)")
    # one line per side of the rule: five names side by side are wider than the column
    labels = [n.replace(" -> ", " ->\n").replace(" (", "\n(") for n in pair_names]
    ax.set_xticks(range(P), labels, fontsize=MIN_FONT)
    finish_axis(ax, ylabel=_CROSS_ENTROPY, title=title, legend=True)
    return finish_figure(fig)


def ocr_spectra(
    spectra: Mapping[str, Array],
    *,
    top: int | None = 60,
    title: str = "Singular values of the output-value map (largest = 1)",
) -> Figure:
    """Singular values, normalized by the largest, of several matrices on one log-scale plot.

    Args:
        spectra: name -> ``(n,)`` singular values, largest first. A name containing an arm of
            :data:`OCR_ARM_COLOURS` takes its colour; one containing ``"trained"`` is drawn solid with dots.
        top: how many of the largest singular values to show (None = all).
    """
    fig, axes = new_figure(width=6.0, height=3.8)
    ax: Axes = axes[0, 0]
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
    finish_axis(ax, xlabel="index of singular value", ylabel="singular value / largest", title=title, legend=True)
    return finish_figure(fig)


def ocr_margin_grid(
    m_train: Array,
    m_test: Array,
    margins: Array,
    bounds: Array,
    law: Array,
    *,
    title: str = "Held-out margin of the min-nuclear-norm solution",
) -> Figure:
    """The held-out margin at every ``(m_train, m_test)`` of a grid against ``m_train / m_test``, with bound and law.

    Args:
        m_train, m_test: ``(P,)`` training and held-out subjects per fact value at each grid point.
        margins: ``(P,)`` measured held-out margin (training margin 1); bounds: ``(P,)`` a lower bound at each
            point (e.g. Theorem 2's); law: ``(P,)`` the value a law predicts at each point.
    """
    ratio = to_numpy(m_train) / to_numpy(m_test)
    measured, bound, predicted = to_numpy(margins), to_numpy(bounds), to_numpy(law)
    order = np.argsort(ratio, kind="stable")
    fig, axes = new_figure(width=6.0, height=3.8)
    ax: Axes = axes[0, 0]
    ax.plot(ratio[order], predicted[order], "-", color="grey", lw=1.2, label="min(1, √(m_train / m_test))")
    ax.plot(
        ratio[order], bound[order], "--", color="black", lw=1.0, label="Theorem 2 bound: m_train / (m_train + m_test)"
    )
    ax.scatter(
        ratio,
        measured,
        s=36,
        facecolors="none",
        edgecolors=OCR_ARM_COLOURS["factorized"],
        zorder=3,
        label="solution's smallest held-out margin",
    )
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.1)
    finish_axis(
        ax,
        xlabel="m_train / m_test (subjects per fact value)",
        ylabel="held-out margin (training = 1)",
        title=title,
        legend=True,
        legend_loc="lower right",
        grid="both",
    )
    return finish_figure(fig)


def ocr_training_draw(
    fact_counts: Array,
    implication_counts: Array,
    is_train: Array,
    *,
    title: str = "How often each subject appears in a draw of training sequences",
) -> Figure:
    """Two bar charts, one bar per subject (training subjects first): how many sequences of a training draw ask the
    subject's fact (top) and its implication (bottom). A leak-free draw has no bottom bar for a test subject.

    Args:
        fact_counts, implication_counts: ``(n_subjects,)`` counts of sequences asking each subject's fact and
            implication.
        is_train: ``(n_subjects,)`` bool, True where the subject's implication is in training.
    """
    train = np.asarray(to_numpy(is_train), dtype=bool)
    order = np.concatenate([np.flatnonzero(train), np.flatnonzero(~train)])
    colours = np.where(train[order], _SPLIT_COLOURS["train"], _SPLIT_COLOURS["test"])
    fig, axes = new_figure(nrows=2, width=6.5, height=2.2, sharex=True, sharey=True)
    x = np.arange(len(order))
    for ax, counts, what in zip(axes[:, 0], (fact_counts, implication_counts), ("its fact", "its implication")):
        ax.bar(x, to_numpy(counts)[order], width=1.0, color=colours)
        finish_axis(ax, ylabel="sequences", title=f"sequences that ask {what}", title_size=MIN_FONT + 1)
    axes[1, 0].set_xlim(-0.5, len(order) - 0.5)
    axes[1, 0].set_xticks([])
    n_train = int(train.sum())
    axes[1, 0].set_xlabel(f"{n_train} training subjects, then {len(order) - n_train} test subjects")
    axes[0, 0].legend(
        handles=[
            Patch(color=_SPLIT_COLOURS["train"], label="implication in training"),
            Patch(color=_SPLIT_COLOURS["test"], label="implication held out (test)"),
        ],
        fontsize=MIN_FONT,
        loc="upper right",
    )
    return finish_figure(fig, title=title)


def ocr_one_step(
    shares: Mapping[str, Array],
    *,
    chance: float | None = None,
    title: str = "Held-out subjects whose right value one step raises most",
) -> Figure:
    """One bar per case (mean over seeds, every seed a dot): a share between 0 and 1, e.g. of the held-out subjects
    whose right implication value one training step raises most.

    Args:
        shares: case label -> ``(S,)`` shares of ``S`` seeds. A label containing an arm of :data:`OCR_ARM_COLOURS`
            takes its colour; a ``", "`` in it starts a new line under the bar.
        chance: draw a dotted line at this share.
    """
    fig, axes = new_figure(width=6.0, height=3.4)
    ax: Axes = axes[0, 0]
    for k, (name, value) in enumerate(shares.items()):
        v = to_numpy(value).reshape(-1)
        arm = next((a for a in OCR_ARM_COLOURS if a in name), None)
        colour = OCR_ARM_COLOURS.get(arm) if arm else "grey"
        ax.bar(k, v.mean(), 0.6, color=colour, alpha=0.8)
        ax.plot(np.full(len(v), k), v, "o", color="black", ms=3)
    if chance is not None:
        ax.axhline(chance, color="grey", lw=0.8, ls=":", label=f"chance ({chance:.0%})")
    ax.set_xticks(range(len(shares)), [name.replace(", ", ",\n") for name in shares], fontsize=MIN_FONT)
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    finish_axis(ax, ylabel="share (bar: mean; dots: seeds)", title=title, legend=chance is not None)
    return finish_figure(fig)


def ocr_directions(
    spectra: Mapping[str, Array],
    *,
    threshold: float = 0.01,
    top: int | None = 80,
    title: str = "Singular values of the output-value map (largest = 1)",
) -> Figure:
    """Singular values of several maps, each divided by its largest, on a log scale, with a line at ``threshold``;
    the legend counts each map's values above it (its number of directions).

    Args:
        spectra: name -> ``(n,)`` singular values, largest first. A name containing an arm of
            :data:`OCR_ARM_COLOURS` takes its colour; the maps of one arm are told apart by line style.
        threshold: the line, as a fraction of the largest singular value.
        top: how many of the largest singular values to show (None = all).
    """
    fig, axes = new_figure(width=6.0, height=3.8)
    ax: Axes = axes[0, 0]
    styles = ("-", "--", ":", "-.")
    seen: dict[str | None, int] = {}
    for name, s in spectra.items():
        v = to_numpy(s)
        v = v / v[0]
        arm = next((a for a in OCR_ARM_COLOURS if a in name), None)
        k = seen[arm] = seen.get(arm, -1) + 1
        shown = v[:top]
        ax.plot(
            np.arange(1, len(shown) + 1),
            shown,
            styles[k % len(styles)],
            lw=1.6,
            label=f"{name}: {int((v > threshold).sum())} above",
            color=OCR_ARM_COLOURS.get(arm) if arm else None,
        )
    ax.axhline(threshold, color="grey", lw=0.8, ls=":", label=f"{threshold:.0%} of the largest")
    ax.set_yscale("log")
    finish_axis(ax, xlabel="index of singular value", ylabel="singular value / largest", title=title, legend=True)
    return finish_figure(fig)


def ocr_held_out_by_arm(
    accuracy: Mapping[str, Array],
    loss: Mapping[str, Array],
    *,
    chance_accuracy: float,
    chance_loss: float,
    title: str = "Held-out implications, per way of training",
) -> Figure:
    """Held-out accuracy (left) and loss (right) of several training arms: one row per arm, one dot per seed.

    Args:
        accuracy: arm -> ``(S,)`` held-out accuracy of ``S`` seeds; loss: arm -> ``(S,)`` held-out loss (nats),
            the same arms. An arm whose name contains ``"merged"`` takes the merged colour, any other the factorized.
        chance_accuracy, chance_loss: the accuracy and loss of a model that ignores the facts (``1/n`` and
            ``log n`` for ``n`` candidates), drawn as dashed lines.
    """
    if not accuracy or list(accuracy) != list(loss):
        raise ValueError(
            f"accuracy and loss need the same arms in the same order, got {list(accuracy)} and {list(loss)}"
        )
    fig, axes = new_figure(ncols=2, width=MAX_WIDTH / 2, height=3.4, sharey=True)
    arms = list(accuracy)
    rows = np.arange(len(arms))[::-1]  # the first arm on top
    for ax, values, reference, ref_label in (
        (axes[0, 0], accuracy, chance_accuracy, "chance accuracy"),
        (axes[0, 1], loss, chance_loss, f"log {round(np.exp(chance_loss))}: chance loss"),
    ):
        for y, arm in zip(rows, arms):
            v = to_numpy(values[arm]).ravel()
            colour = OCR_ARM_COLOURS["merged" if "merged" in arm else "factorized"]
            ax.scatter(v, np.full(len(v), y), s=30, facecolors="none", edgecolors=colour, zorder=3)
        ax.axvline(reference, color="grey", ls="--", lw=1, label=ref_label)
        ax.set_ylim(-0.6, len(arms) - 0.4)
    axes[0, 0].set_yticks(rows, arms)
    axes[0, 0].set_xlim(-0.05, 1.05)
    axes[0, 1].set_xscale("log")
    finish_axis(axes[0, 0], xlabel="held-out accuracy", grid="x")
    finish_axis(axes[0, 1], xlabel="held-out loss (nats), log scale", grid="x")
    return legend_below(fig, axes, title)
