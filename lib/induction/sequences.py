"""Repeated-sequence data for induction heads (chapters 5-7).

Sequences start with a BOS token and then repeat a random segment whose length is drawn per sample, so no
fixed offset solves the task; the evaluation sets are the ones Olsson et al. use, drawn from one fixed seed.
Token ``0`` is the BOS token; the random content tokens are ``1 .. vocab - 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch

from lib.core import seeds, validate
from lib.core.device import check_device
from lib.core.tokens import BOS, EVAL_SEED


@dataclass(frozen=True)
class InductionConfig:
    """The task and the model; the defaults reproduce chapter 5 on a laptop CPU.

    Attributes:
        n_layers: attention layers (2 can form an induction head; 1 is the control that cannot).
        n_heads: heads per layer.
        d_model: width of the residual stream.
        d_head: width of each head's query/key/value.
        vocab: vocabulary size including the BOS token ``0``.
        seq_len: tokens per sequence, BOS included (also the model's context length ``n_ctx``).
        min_repeat, max_repeat: the repeated segment's length is drawn uniformly from this range,
            per sample; the segment then repeats until the sequence is full.
        prefix_segment, prefix_repeats: the prefix-matching set is BOS, then a segment of distinct
            random tokens repeated until the sequence (``seq_len`` tokens) is full; the segment's length
            is drawn per sequence from ``min(min_repeat, prefix_segment)`` to ``prefix_segment`` (5 to 12),
            so it appears at least ``prefix_repeats`` times. Olsson et al. use one segment of 25 tokens
            repeated 4 times in 8192-token contexts; we scale the segment to our context and vary its
            length, so that no head attending a fixed distance back scores high (see
            :func:`prefix_matching_tokens`).
        init_std: standard deviation of the initial weights; ``None`` keeps transformer_lens' default
            ``0.8 / sqrt(d_model)`` (GPT-2's 0.02 has been reported to stop induction heads forming).
    """

    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    d_head: int = 16
    vocab: int = 64
    seq_len: int = 49
    min_repeat: int = 5
    max_repeat: int = 24
    prefix_segment: int = 12
    prefix_repeats: int = 4
    init_std: float | None = None

    def __post_init__(self) -> None:
        for name in (
            "n_layers",
            "n_heads",
            "d_model",
            "d_head",
            "seq_len",
            "min_repeat",
            "max_repeat",
            "prefix_segment",
        ):
            validate.positive_int(name, getattr(self, name))
        validate.int_at_least("vocab", self.vocab, 3, "BOS plus two content tokens")
        validate.int_at_least("prefix_repeats", self.prefix_repeats, 2, "a segment and at least one repeat")
        if self.min_repeat > self.max_repeat:
            raise ValueError(f"min_repeat ({self.min_repeat}) must be <= max_repeat ({self.max_repeat})")
        if 1 + 2 * self.max_repeat > self.seq_len:
            raise ValueError(
                f"max_repeat={self.max_repeat} is too long for seq_len={self.seq_len}: BOS plus two copies "
                f"need 1 + 2 * max_repeat = {1 + 2 * self.max_repeat} tokens; "
                f"allowed max_repeat <= {(self.seq_len - 1) // 2}"
            )
        if 1 + self.prefix_segment * self.prefix_repeats > self.seq_len:
            raise ValueError(
                f"the prefix-matching set needs 1 + prefix_segment * prefix_repeats = "
                f"{1 + self.prefix_segment * self.prefix_repeats} tokens, more than seq_len={self.seq_len}; "
                f"allowed prefix_segment <= {(self.seq_len - 1) // self.prefix_repeats}"
            )
        if self.max_repeat > self.vocab - 1:
            raise ValueError(
                f"vocab={self.vocab} is too small for segments of up to max_repeat={self.max_repeat} distinct "
                f"content tokens; need vocab >= {self.max_repeat + 1}"
            )
        if self.prefix_segment > self.vocab - 1:
            raise ValueError(
                f"vocab={self.vocab} is too small for a prefix-matching segment of {self.prefix_segment} "
                f"distinct content tokens; need vocab >= {self.prefix_segment + 1}"
            )
        if self.init_std is not None and not self.init_std > 0:
            raise ValueError(f"init_std must be positive or None, got {self.init_std!r}")

    @property
    def prefix_periods(self) -> tuple[int, int]:
        """``(shortest, longest)`` segment of the prefix-matching set (see :func:`prefix_matching_tokens`)."""
        return min(self.min_repeat, self.prefix_segment), self.prefix_segment

    def with_layers(self, n_layers: int) -> InductionConfig:
        """The same config with another number of layers (e.g. the one-layer control)."""
        return replace(self, n_layers=n_layers)


def distinct_tokens(batch: int, length: int, low: int, high: int, generator: torch.Generator) -> torch.Tensor:
    """``(batch, length) int64``: per row, ``length`` distinct tokens of ``low <= id < high`` in random order, drawn
    on ``generator``'s device.

    Raises:
        ValueError: fewer than ``length`` ids in ``[low, high)``.
    """
    validate.positive_int("batch", batch)
    validate.non_negative_int("low", low)
    if not (isinstance(high, int) and high - low >= length):
        raise ValueError(f"need at least length = {length} ids in [low, high) = [{low}, {high!r})")
    keys = torch.rand((batch, high - low), generator=generator, device=generator.device)
    return keys.argsort(dim=1)[:, :length] + low


def repeated_sequences(
    batch: int,
    generator: torch.Generator,
    config: InductionConfig = InductionConfig(),
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Training sequences: BOS, then a random segment of per-sample length, repeated until full.

    The segment's tokens are distinct, so "what followed this token last time" has one answer. They are drawn on
    ``generator.device`` (the CPU for :func:`seeded_generator`'s, the same numbers on every machine), then moved to
    ``device`` (default: where they were drawn).

    Returns:
        tokens: ``(batch, seq_len) int64``; ``tokens[:, 0] == BOS`` and
            ``tokens[b, 1 + i] == tokens[b, 1 + i % period[b]]``.
        period: ``(batch,) int64``, the segment length of each sample, in ``[min_repeat, max_repeat]``.
    """
    validate.positive_int("batch", batch)
    target = check_device(device)
    device = generator.device
    period = torch.randint(config.min_repeat, config.max_repeat + 1, (batch,), generator=generator, device=device)
    segment = distinct_tokens(batch, config.max_repeat, 1, config.vocab, generator)  # BOS left out
    index = torch.arange(config.seq_len - 1, device=device)[None, :] % period[:, None]
    body = segment.gather(1, index)
    bos = torch.full((batch, 1), BOS, dtype=torch.int64, device=device)
    tokens = torch.cat([bos, body], dim=1)
    return (tokens, period) if target is None else (tokens.to(target), period.to(target))


def every_period(
    config: InductionConfig = InductionConfig(), seed: int = seeds.seed(0)
) -> tuple[torch.Tensor, torch.Tensor]:
    """One training sequence for each period ``min_repeat .. max_repeat``, in order.

    The periods are equally likely in :func:`repeated_sequences`, and whether a prediction is right by
    position alone depends only on the period (the tokens are distinct), so the masked predictions of
    these sequences, pooled, weigh every kind of prediction exactly as the training distribution does
    (e.g. for :func:`fixed_offset_share` and :func:`best_offset_mix`).

    Returns:
        ``(tokens (n_periods, seq_len) int64, period (n_periods,) int64)`` on the CPU.
    """
    generator = seeded_generator(seed)
    rows = [
        repeated_sequences(1, generator, replace(config, min_repeat=p, max_repeat=p))[0]
        for p in range(config.min_repeat, config.max_repeat + 1)
    ]
    return torch.cat(rows), torch.arange(config.min_repeat, config.max_repeat + 1)


def make_batch_fn(config: InductionConfig = InductionConfig()) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A ``make_batch(batch_size, generator) -> (batch, seq_len) int64`` for :func:`lib.core.train.train`."""

    def make_batch(batch_size: int, generator: torch.Generator) -> torch.Tensor:
        return repeated_sequences(batch_size, generator, config)[0]

    return make_batch


def repeat_mask(period: torch.Tensor, config: InductionConfig = InductionConfig()) -> torch.Tensor:
    """Which predictions an induction head can make, aligned with :func:`per_token_loss`.

    Entry ``p`` predicts ``tokens[:, p + 1]`` from the current token ``tokens[:, p]``. It is ``True``
    when the current token has appeared before (``p > period``), so the answer is "the token that
    followed it last time". (At ``p == period`` the next token is already a repeat, but the current
    token is the segment's last, seen for the first time: nothing in the context points to the answer.)

    Returns:
        ``(batch, seq_len - 1) bool``.
    """
    position = torch.arange(config.seq_len - 1, device=period.device)
    return position[None, :] > period[:, None]


def prefix_matching_tokens(
    batch: int,
    generator: torch.Generator,
    config: InductionConfig = InductionConfig(),
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Olsson et al.'s prefix-matching set, with a segment length that varies per sequence.

    Each sequence is BOS, then a segment of distinct random tokens repeated until the sequence is full.
    The segment's length is drawn per sequence from :attr:`InductionConfig.prefix_periods` (5 to 12 by
    default), so it appears at least ``prefix_repeats`` times. With one fixed length ``n`` (Olsson et al.
    use 25), a purely positional head that attends ``n - 1``, ``2n - 1``, ... tokens back would score
    as high as an induction head; with varied lengths, a head that attends a fixed distance ``d`` back is
    right only in the sequences whose segment length divides ``d + 1``.

    Returns:
        ``(batch, seq_len) int64``, drawn on ``generator.device`` and moved to ``device`` (default: left there);
        :func:`repeat_period` recovers each segment length.
    """
    validate.positive_int("batch", batch)
    shortest, longest = config.prefix_periods
    short = replace(config, min_repeat=shortest, max_repeat=longest)
    return repeated_sequences(batch, generator, short, device)[0]


def repeat_period(tokens: torch.Tensor) -> torch.Tensor:
    """The segment length of each sequence of repeated distinct tokens after BOS (e.g. the prefix-matching set).

    Args:
        tokens: ``(batch, seq) int64``, each row BOS then a segment of distinct tokens repeated at least twice.

    Returns:
        ``(batch,) int64``: the distance from the first content token to its next occurrence.
    """
    if tokens.ndim != 2 or tokens.shape[1] < 3:
        raise ValueError(f"tokens must be (batch, seq >= 3), got shape {tuple(tokens.shape)}")
    again = tokens[:, 2:] == tokens[:, 1:2]  # (batch, seq - 2): where the first content token recurs
    if not again.any(dim=1).all():
        raise ValueError("every row must repeat its first content token: no period to read")
    return again.int().argmax(dim=1) + 1


def fixed_offset_share(tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """How often copying the token a fixed distance back would be right, for every distance.

    A head that attends from position ``p`` to position ``p - d`` and copies that token predicts
    ``tokens[:, p - d]`` for ``tokens[:, p + 1]``. On a repeated segment of period ``n`` this is right
    exactly when ``n`` divides ``d + 1``: a fixed offset solves the task for some periods, never for all.

    Args:
        tokens: ``(batch, seq) int64``, e.g. :func:`repeated_sequences`.
        mask: ``(batch, seq - 1) bool``, the predictions to count (e.g. :func:`repeat_mask`).

    Returns:
        ``(seq - 1,) float``: entry ``d`` is the share of the masked predictions that the token ``d``
        positions back gets right (a prediction with fewer than ``d`` tokens before it counts as wrong).
    """
    if tokens.ndim != 2 or mask.shape != (tokens.shape[0], tokens.shape[1] - 1) or mask.dtype != torch.bool:
        raise ValueError(
            f"need tokens (batch, seq) and a bool mask (batch, seq - 1); got {tuple(tokens.shape)} and "
            f"{mask.dtype} {tuple(mask.shape)}"
        )
    if not mask.any():
        raise ValueError("mask selects no prediction: the share is undefined")
    n = tokens.shape[1] - 1
    position = torch.arange(n, device=tokens.device)
    source = position[:, None] - position[None, :]  # (p, d): the position d back from p
    context = tokens[:, source.clamp_min(0)]  # (batch, p, d)
    right = (context == tokens[:, 1:, None]) & (source >= 0)
    return right[mask].float().mean(dim=0)


def best_offset_mix(
    tokens: torch.Tensor, mask: torch.Tensor, steps: int = 300, lr: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """The best a head that attends by position alone can do: one learned score per distance back.

    The head attends from position ``p`` to each position ``p - d`` (``d = 0 .. p``, BOS included) with
    weight ``softmax(score)`` over the positions it can see, and copies what it attends to, so it puts on
    the right token the total weight of the distances whose token is the answer (on a repeated segment of
    period ``n``, the ``d`` that ``n`` divides ``d + 1``). The scores that minimise the mean loss over the
    masked predictions are fitted with Adam from all-equal scores.

    Args:
        tokens: ``(batch, seq) int64``. mask: ``(batch, seq - 1) bool``, the predictions to score.
        steps, lr: Adam's steps and learning rate.

    Returns:
        ``(scores (seq - 1,), loss (steps + 1,))``: the fitted score of each distance, and the mean loss
        (nats) on the masked predictions before each step and after the last.
    """
    validate.positive_int("steps", steps)
    validate.positive_number("lr", lr)
    fixed_offset_share(tokens, mask)  # validates the inputs
    n = tokens.shape[1] - 1
    position = torch.arange(n, device=tokens.device)
    source = position[:, None] - position[None, :]  # (p, d): the position d back from p
    visible = (source >= 0).expand(tokens.shape[0], n, n)[mask]  # (predictions, d)
    right = ((tokens[:, source.clamp_min(0)] == tokens[:, 1:, None]) & (source >= 0))[mask]
    if not right.any(dim=1).all():
        raise ValueError("some masked prediction has no earlier copy of its answer: no offset can predict it")
    # predictions with the same visible and right distances have the same loss: fit each kind once, weighted
    kinds, count = torch.cat([visible, right], dim=1).unique(dim=0, return_counts=True)
    visible, right, weight = kinds[:, :n], kinds[:, n:], count / count.sum()
    with torch.enable_grad():
        score = torch.zeros(n, device=tokens.device, requires_grad=True)
        optimizer = torch.optim.Adam([score], lr=lr)
        losses = []
        for step in range(steps + 1):
            logits = score.expand_as(visible).masked_fill(~visible, -torch.inf)
            log_right = logits.masked_fill(~right, -torch.inf).logsumexp(dim=1) - logits.logsumexp(dim=1)
            loss = -(weight * log_right).sum()
            losses.append(loss.detach())
            if step < steps:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    return score.detach(), torch.stack(losses)


def seeded_generator(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed`` (evaluation sets are made from one).

    Always on the CPU: a CUDA generator draws other numbers for the same seed, so data drawn there would differ
    from the CPU's. Draw with it, then move the data (the ``device`` argument of :func:`repeated_sequences`).
    """
    return torch.Generator().manual_seed(validate.seed(seed))


class EvalSets(NamedTuple):
    """The fixed evaluation data that chapters 5-7 share (see :func:`eval_sets`)."""

    tokens: torch.Tensor  # (n, seq_len) int64: repeated-segment sequences (the training distribution)
    period: torch.Tensor  # (n,) int64: their segment lengths
    mask: torch.Tensor  # (n, seq_len - 1) bool: where an induction head can predict (see repeat_mask)
    prefix_tokens: torch.Tensor  # (64, seq_len) int64: the prefix-matching set
    copy_tokens: torch.Tensor  # (25,) int64: random tokens for the copying score


def eval_sets(
    config: InductionConfig = InductionConfig(), device: torch.device | str = "cpu", n: int = 256
) -> EvalSets:
    """The evaluation sets of chapters 5-7, drawn in one fixed order from a CPU generator seeded with ``EVAL_SEED``
    and moved to ``device`` (the same sets on every device).

    Every chapter that scores heads or measures in-context learning uses these, so their numbers are comparable.
    ``n`` is the number of repeated sequences; the prefix-matching set has 64, the copying set 25 tokens.
    """
    validate.positive_int("n", n)
    target = check_device(device)
    generator = seeded_generator(EVAL_SEED)
    tokens, period = repeated_sequences(n, generator, config, target)
    prefix_tokens = prefix_matching_tokens(64, generator, config, target)
    copy_tokens = torch.randint(1, config.vocab, (25,), generator=generator).to(target)
    return EvalSets(tokens, period, repeat_mask(period, config), prefix_tokens, copy_tokens)
