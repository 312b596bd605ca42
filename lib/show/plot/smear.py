"""Figures of smeared keys (chapter 6): the arms' losses over training and what each head puts in its keys."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lib.core.heads import head_name
from lib.show._common import MIN_FONT, Array, band, finish_axis, legend_below, new_figure, to_numpy

SMEAR_ARM_COLOURS = {
    "1 layer": "tab:red",
    "1 layer, smeared": "tab:orange",
    "2 layers": "tab:blue",
    "2 layers, smeared": "tab:green",
}
"""Colour of each arm in the figures of chapter 6."""


def arm_loss_curves(
    steps: Array | Mapping[str, Array],
    curves: Mapping[str, Array],
    *,
    threshold: float | None = None,
    phase_steps: Mapping[str, Sequence[int | None]] | None = None,
    vocab: int | None = None,
    title: str = "Loss on repeated tokens, mean and range over seeds",
) -> Figure:
    """Several arms' losses over training: mean line and min-max band over seeds, with phase-change marks.

    Args:
        steps: ``(K,)`` checkpoint steps, or arm name -> ``(K_arm,)`` when the arms ran for different lengths.
        curves: arm name -> ``(S, K)`` losses of ``S`` seeds.
        threshold: the loss that defines the phase change (horizontal line).
        phase_steps: arm name -> list of each seed's phase-change step (``None`` = never); the mean is
            marked with a vertical line in the arm's colour.
        vocab: the number of tokens a guess is spread over; draws the chance level ``log(vocab)``.
    """
    fig, axes = new_figure(1, 1, width=7.2, height=4.0)
    ax: Axes = axes[0, 0]
    for arm, values in curves.items():
        colour = SMEAR_ARM_COLOURS.get(arm)
        x = to_numpy(steps[arm] if isinstance(steps, Mapping) else steps)
        band(ax, x, values, colour, arm, ls="--" if "smeared" not in arm else "-")
        reached = [s for s in (phase_steps or {}).get(arm, []) if s is not None]
        if reached:
            ax.axvline(float(np.mean(reached)), color=colour, lw=1, ls=":")
    if threshold is not None:
        ax.axhline(threshold, color="black", lw=0.8, ls="-.", label=f"phase-change threshold ({threshold:g} nat)")
    if vocab is not None:
        ax.axhline(np.log(vocab), color="grey", lw=0.8, ls=":", label=f"chance, log {vocab}")
    finish_axis(
        ax,
        xlabel="training step (dotted verticals: mean phase-change step)",
        ylabel="loss on repeated tokens (nats)",
        title=title,
        title_size=10,
    )
    return legend_below(fig, axes, None)


def smear_sigma_over_training(
    steps: Array,
    sigma: Array,
    *,
    highlight: Iterable[Sequence[int]] | None = None,
    mark: int | None = None,
    title: str = "",
) -> Figure:
    """The learned weight of the current key, ``sigmoid(alpha)``, of every head over training; one panel per layer.

    Args:
        steps: ``(K,)`` checkpoint steps. sigma: ``(K, layers, heads)``.
        highlight: ``(layer, head)`` pairs drawn thick (e.g. the induction heads).
        mark: a step to mark with a vertical line (e.g. the phase change).
    """
    s = to_numpy(sigma)
    _, layers, heads = s.shape
    fig, axes = new_figure(layers, 1, width=4.4, height=4.6, sharey=True)
    x = to_numpy(steps)
    strong = set(map(tuple, highlight or []))
    for layer, ax in enumerate(axes[0]):
        ax.axhline(0.5, color="grey", lw=0.8, ls=":", label="start, 0.5")
        if mark is not None:
            ax.axvline(mark, color="black", lw=0.8, ls="-.", label=f"phase change (step {mark})")
        for h in range(heads):
            thick = (layer, h) in strong
            ax.plot(
                x,
                s[:, layer, h],
                lw=2.2 if thick else 1.0,
                label=head_name((layer, h)) + (" (induction)" if thick else ""),
            )
        ax.set_ylim(0, 1)
        finish_axis(ax, xlabel="training step", title=f"layer {layer}", title_size=MIN_FONT)
    axes[0, 0].set_ylabel("σ(α): weight of the current key\n(1 = plain key, 0 = previous key)")
    return legend_below(fig, axes, title or "What each head learns to put in its keys")


def arm_icl_by_kind(
    steps: Array,
    curves: Mapping[str, Mapping[str, Array]],
    *,
    title: str = "ICL score by kind of late position, mean and range over seeds",
) -> Figure:
    """Several arms' ICL scores over training, one panel per kind of late position (chapter 7's mixed task).

    Args:
        steps: ``(K,)`` checkpoint steps.
        curves: kind ("repeated", "non-repeated") -> arm name -> ``(S, K)`` ICL scores of ``S`` seeds (late minus
            early loss, nats; negative = in-context learning).
    """
    fig, axes = new_figure(len(curves), 1, width=3.6, height=3.4, sharey=True)
    x = to_numpy(steps)
    for ax, (kind, arms) in zip(axes[0], curves.items()):
        ax.axhline(0.0, color="grey", lw=0.8, ls=":", label="no ICL")
        for arm, values in arms.items():
            band(ax, x, values, SMEAR_ARM_COLOURS.get(arm), arm, ls="--" if "smeared" not in arm else "-")
        finish_axis(ax, xlabel="training step", title=f"late {kind} positions", title_size=MIN_FONT)
    axes[0, 0].set_ylabel("ICL score (nats; below 0 = ICL)")
    return legend_below(fig, axes, title)


def smear_before_loss(
    steps: Array,
    sigma: Mapping[str, Array],
    loss: Mapping[str, Array],
    *,
    mark: Mapping[str, int] | None = None,
    title: str = "How much of each change is done, over training",
) -> Figure:
    """Which comes first, the smear or the phase change: each curve drawn as the share of its change (from its first
    value to its last) done at each checkpoint, one panel per run.

    Args:
        steps: ``(K,)`` checkpoint steps.
        sigma: panel title (e.g. ``"seed 0"``) -> ``(K, n)`` the ``σ(α)`` of ``n`` heads (the induction heads).
        loss: the same titles -> ``(K,)`` the loss on repeated tokens.
        mark: the same titles -> a step to mark with a dash-dotted line (the phase-change step).

    Raises:
        ValueError: ``loss`` (or ``mark``) does not have the panels of ``sigma``.
    """
    panels = list(sigma)
    if not panels or list(loss) != panels or (mark is not None and list(mark) != panels):
        raise ValueError(f"sigma, loss and mark must name the same panels, got {panels}, {list(loss)}")
    x = to_numpy(steps)

    def done(values: np.ndarray) -> np.ndarray:
        change = values[-1] - values[0]
        return (values - values[0]) / np.where(change == 0, 1.0, change)

    fig, axes = new_figure(len(panels), 1, width=2.6, height=3.8, sharey=True)
    for ax, name in zip(axes[0], panels):
        ax.axhline(0.5, color="tab:gray", ls=":", lw=1, label="half of the change")
        curves = to_numpy(sigma[name]).reshape(len(x), -1)
        for j in range(curves.shape[1]):
            ax.plot(x, done(curves[:, j]), color="tab:orange", lw=1.6, label="σ(α) of an induction head")
        ax.plot(x, done(to_numpy(loss[name]).ravel()), color="black", lw=2, label="loss on repeated tokens")
        if mark is not None:
            ax.axvline(mark[name], color="black", ls="-.", lw=1, label="phase-change step")
        finish_axis(ax, xlabel="training step", title=name, title_size=MIN_FONT, label_size=MIN_FONT)
        ax.tick_params(labelsize=MIN_FONT)
    axes[0, 0].set_yticks([0, 0.5, 1])
    finish_axis(axes[0, 0], ylabel="share of the change done", label_size=MIN_FONT)
    return legend_below(fig, axes, title)


def smear_off_losses(
    with_smear: Sequence[float],
    without: Sequence[float],
    *,
    seeds: Sequence[int],
    chance: float,
    title: str = "The smeared one-layer models with and without the smear",
) -> Figure:
    """Each seed's loss on repeated tokens with the smear and with it switched off (same weights), against chance.

    Args:
        with_smear, without: one loss (nats) per seed. seeds: the seeds, in the same order.
        chance: the loss of a uniform guess, ``log(vocab)`` (a horizontal line).
    """
    if not len(with_smear) == len(without) == len(seeds) > 0:
        raise ValueError(f"one loss per seed, got {len(with_smear)}, {len(without)} for {len(seeds)} seeds")
    fig, axes = new_figure(1, 1, width=min(6.0, 2.4 + 1.2 * len(seeds)), height=3.2)
    ax: Axes = axes[0, 0]
    x = np.arange(len(seeds))
    for shift, values, colour, label in (
        (-0.2, with_smear, SMEAR_ARM_COLOURS["1 layer, smeared"], "with the smear"),
        (0.2, without, "tab:gray", "smear switched off"),
    ):
        bars = ax.bar(x + shift, list(values), 0.4, color=colour, label=label)
        ax.bar_label(bars, fmt="%.2f", fontsize=MIN_FONT, padding=2)  # a loss near 0 has no visible bar
    ax.margins(y=0.12)
    ax.axhline(chance, color="black", lw=0.8, ls=":", label=f"chance, {chance:.2f} nats")
    ax.set_xticks(x, [f"seed {s}" for s in seeds])
    finish_axis(ax, ylabel="loss on repeated tokens (nats)", grid="y")
    return legend_below(fig, axes, title)
