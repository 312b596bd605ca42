"""Repeated-sequence data, attention-only transformers and a hand-built induction circuit.

An induction head completes ``[A][B] ... [A] -> [B]``: at the second ``[A]`` it attends to the token that
followed the first ``[A]`` and copies it (Elhage et al. 2021; Olsson et al. 2022). This module gives the
chapters everything they need to grow one and to look inside it:

- data: sequences that start with a BOS token and then repeat a random segment whose length is drawn
  per sample (so no fixed offset solves the task), and the two evaluation sets Olsson et al. use;
- models: attention-only transformer_lens 4.x models built from config (``boot_native``, no download),
  hookable by the classic names (``blocks.1.attn.hook_k``, ``hook_pattern``, ``hook_z``, ...);
- losses: the training loss and the loss on repeated vs. first-seen tokens (the per-token loss itself,
  ``per_token_loss``, lives in :mod:`lib.scores` and is re-exported here);
- a two-layer model whose weights are set in code: a previous-token head and an induction head.

Token ``0`` is the BOS token; the random content tokens are ``1 .. vocab - 1``.
Heavy import: transformer_lens is imported only inside the functions that build models.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn

from lib import validate
from lib.device import check_device
from lib.scores import masked_mean, per_token_loss
from lib.train import History, TrainConfig, train

if TYPE_CHECKING:
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge import TransformerBridge

BOS = 0
"""The beginning-of-sequence token; content tokens are drawn from ``1 .. vocab - 1``."""


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


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def _distinct_tokens(batch: int, length: int, vocab: int, generator: torch.Generator) -> torch.Tensor:
    """``(batch, length) int64``: per row, ``length`` distinct content tokens in random order."""
    keys = torch.rand((batch, vocab - 1), generator=generator, device=generator.device)
    return keys.argsort(dim=1)[:, :length] + 1


def repeated_sequences(
    batch: int, generator: torch.Generator, config: InductionConfig = InductionConfig()
) -> tuple[torch.Tensor, torch.Tensor]:
    """Training sequences: BOS, then a random segment of per-sample length, repeated until full.

    The segment's tokens are distinct, so "what followed this token last time" has one answer.

    Returns:
        tokens: ``(batch, seq_len) int64`` on ``generator.device``; ``tokens[:, 0] == BOS`` and
            ``tokens[b, 1 + i] == tokens[b, 1 + i % period[b]]``.
        period: ``(batch,) int64``, the segment length of each sample, in ``[min_repeat, max_repeat]``.
    """
    validate.positive_int("batch", batch)
    device = generator.device
    period = torch.randint(config.min_repeat, config.max_repeat + 1, (batch,), generator=generator, device=device)
    segment = _distinct_tokens(batch, config.max_repeat, config.vocab, generator)
    index = torch.arange(config.seq_len - 1, device=device)[None, :] % period[:, None]
    body = segment.gather(1, index)
    bos = torch.full((batch, 1), BOS, dtype=torch.int64, device=device)
    return torch.cat([bos, body], dim=1), period


def every_period(config: InductionConfig = InductionConfig(), seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
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
    """A ``make_batch(batch_size, generator) -> (batch, seq_len) int64`` for :func:`lib.train.train`."""

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
    batch: int, generator: torch.Generator, config: InductionConfig = InductionConfig()
) -> torch.Tensor:
    """Olsson et al.'s prefix-matching set, with a segment length that varies per sequence.

    Each sequence is BOS, then a segment of distinct random tokens repeated until the sequence is full.
    The segment's length is drawn per sequence from :attr:`InductionConfig.prefix_periods` (5 to 12 by
    default), so it appears at least ``prefix_repeats`` times. With one fixed length ``n`` (Olsson et al.
    use 25), a purely positional head that attends ``n - 1``, ``2n - 1``, ... tokens back would score
    as high as an induction head; with varied lengths, a head that attends a fixed distance ``d`` back is
    right only in the sequences whose segment length divides ``d + 1``.

    Returns:
        ``(batch, seq_len) int64`` on ``generator.device``; :func:`repeat_period` recovers each segment length.
    """
    validate.positive_int("batch", batch)
    shortest, longest = config.prefix_periods
    return repeated_sequences(batch, generator, replace(config, min_repeat=shortest, max_repeat=longest))[0]


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


def seeded_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with ``seed`` (evaluation sets are made from one)."""
    return torch.Generator(device=check_device(device)).manual_seed(validate.seed(seed))


class EvalSets(NamedTuple):
    """The fixed evaluation data that chapters 5-7 share (see :func:`eval_sets`)."""

    tokens: torch.Tensor  # (n, seq_len) int64: repeated-segment sequences (the training distribution)
    period: torch.Tensor  # (n,) int64: their segment lengths
    mask: torch.Tensor  # (n, seq_len - 1) bool: where an induction head can predict (see repeat_mask)
    prefix_tokens: torch.Tensor  # (64, seq_len) int64: the prefix-matching set
    copy_tokens: torch.Tensor  # (25,) int64: random tokens for the copying score


EVAL_SEED = 1234


def eval_sets(
    config: InductionConfig = InductionConfig(), device: torch.device | str = "cpu", n: int = 256
) -> EvalSets:
    """The evaluation sets of chapters 5-7, drawn in one fixed order from a generator seeded with ``EVAL_SEED``.

    Every chapter that scores heads or measures in-context learning uses these, so their numbers are comparable.
    ``n`` is the number of repeated sequences; the prefix-matching set has 64, the copying set 25 tokens.
    """
    validate.positive_int("n", n)
    generator = seeded_generator(EVAL_SEED, device)
    tokens, period = repeated_sequences(n, generator, config)
    prefix_tokens = prefix_matching_tokens(64, generator, config)
    copy_tokens = torch.randint(1, config.vocab, (25,), generator=generator, device=generator.device)
    return EvalSets(tokens, period, repeat_mask(period, config), prefix_tokens, copy_tokens)


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


def attention_only_config(
    *,
    n_layers: int,
    n_heads: int,
    d_model: int,
    d_head: int,
    n_ctx: int,
    vocab: int,
    layer_norm: bool = False,
    init_std: float | None = None,
    seed: int | None = 0,
) -> TransformerBridgeConfig:
    """The ``TransformerBridgeConfig`` of an attention-only model with learned positions (here and in
    :mod:`lib.natural`); ``init_std`` ``None`` keeps transformer_lens' ``0.8 / sqrt(d_model)``."""
    from transformer_lens.config import TransformerBridgeConfig

    return TransformerBridgeConfig(
        d_model=d_model,
        d_head=d_head,
        n_heads=n_heads,
        n_layers=n_layers,
        n_ctx=n_ctx,
        d_vocab=vocab,
        attn_only=True,
        normalization_type="LN" if layer_norm else None,
        positional_embedding_type="standard",
        initializer_range=-1.0 if init_std is None else init_std,
        seed=seed,
    )


def bridge_config(config: InductionConfig, seed: int | None = 0) -> TransformerBridgeConfig:
    """The ``TransformerBridgeConfig`` of an attention-only model with no LayerNorm.

    No LayerNorm: the residual stream is a plain sum, so a head's direct effect on the logits (the copying score) is
    exactly ``W_E W_V W_O W_U``, and weights can be set by hand.
    """
    return attention_only_config(
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        d_model=config.d_model,
        d_head=config.d_head,
        n_ctx=config.seq_len,
        vocab=config.vocab,
        init_std=config.init_std,
        seed=seed,
    )


def make_model(
    config: InductionConfig = InductionConfig(), seed: int = 0, device: torch.device | str | None = None
) -> TransformerBridge:
    """A freshly initialised attention-only ``TransformerBridge`` (``boot_native``, no download).

    The model maps ``(batch, seq) int64`` tokens to ``(batch, seq, vocab)`` logits, supports
    ``run_with_cache`` / ``run_with_hooks`` with the classic hook names, and exposes ``W_Q, W_K, W_V``
    ``(n_layers, n_heads, d_model, d_head)``, ``W_O`` ``(n_layers, n_heads, d_head, d_model)``,
    ``W_E`` ``(vocab, d_model)``, ``W_pos`` ``(seq_len, d_model)`` and ``W_U`` ``(d_model, vocab)``.
    """
    from transformer_lens.model_bridge.sources import boot_native

    return boot_native(bridge_config(config, validate.seed(seed)), device=check_device(device))


def config_of(model: TransformerBridge) -> InductionConfig:
    """The :class:`InductionConfig` shape of a model built here (task fields keep their defaults)."""
    cfg = model.cfg
    defaults = InductionConfig()
    seq = cfg.n_ctx
    return InductionConfig(
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_model=cfg.d_model,
        d_head=cfg.d_head,
        vocab=cfg.d_vocab,
        seq_len=seq,
        min_repeat=min(defaults.min_repeat, (seq - 1) // 2),
        max_repeat=min(defaults.max_repeat, (seq - 1) // 2),
        prefix_segment=min(defaults.prefix_segment, (seq - 1) // defaults.prefix_repeats, cfg.d_vocab - 1),
    )


# ---------------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------------


def training_loss(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss over every position: the ``loss_fn`` for :func:`lib.train.train`."""
    return per_token_loss(model, tokens).mean()


def repeated_vs_first_loss(
    model: nn.Module, tokens: torch.Tensor, period: torch.Tensor, config: InductionConfig
) -> tuple[float, float]:
    """Mean loss where induction can predict (:func:`repeat_mask`) and everywhere else.

    ``tokens`` and ``period`` are a batch of :func:`repeated_sequences`.
    """
    loss = per_token_loss(model, tokens)
    mask = repeat_mask(period, config)
    return masked_mean(loss, mask).item(), masked_mean(loss, ~mask).item()


# ---------------------------------------------------------------------------------------------
# Training (chapter 5's run, reused by the later chapters)
# ---------------------------------------------------------------------------------------------


TRAINING = TrainConfig(
    steps=600, lr=3e-3, batch_size=32, checkpoint_steps=tuple(range(0, 601, 10)), seed=0, desc="training"
)
"""Chapter 5's training run: 600 AdamW steps at lr 3e-3, batches of 32, a checkpoint every 10 steps."""


def fit(
    model: nn.Module,
    config: InductionConfig,
    seed: int,
    *,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
) -> History:
    """Train ``model`` in place on :func:`repeated_sequences` of ``config``; ``seed`` seeds the batches.

    ``train_config.seed`` is replaced by ``seed``: the book's runs seed weights and batches alike.

    Args:
        evaluate: passed to :func:`lib.train.train`, called at every checkpoint.
    """
    return train(model, make_batch_fn(config), training_loss, replace(train_config, seed=seed), evaluate=evaluate)


def train_model(
    config: InductionConfig = InductionConfig(),
    seed: int = 0,
    *,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
    device: torch.device | str | None = None,
) -> tuple[TransformerBridge, History]:
    """Build a model with :func:`make_model` and train it on :func:`repeated_sequences`, as chapter 5 does.

    ``seed`` seeds both the initial weights and the training batches (see :func:`fit`), like
    :func:`lib.smear.train_model`; chapter 5's run is ``train_model(InductionConfig(), seed=0)``.

    Returns:
        ``(model, history)``: the trained model and its :class:`lib.train.History` (parameter snapshots at
        ``train_config.checkpoint_steps``).
    """
    model = make_model(config, seed=seed, device=device)
    return model, fit(model, config, seed, train_config=train_config, evaluate=evaluate)


# ---------------------------------------------------------------------------------------------
# The induction circuit, built by hand
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HandBuiltLayout:
    """Where each piece of information lives in the hand-built model's residual stream.

    The residual stream is cut into four blocks of one-hot slots:
    ``token`` (which token sits here), ``previous`` (which token sat one position earlier; written by
    the layer-0 head), ``output`` (the token the layer-1 head copied; read by the unembedding) and
    ``position`` (which position this is).
    """

    vocab: int
    seq_len: int

    @property
    def token(self) -> slice:
        return slice(0, self.vocab)

    @property
    def previous(self) -> slice:
        return slice(self.vocab, 2 * self.vocab)

    @property
    def output(self) -> slice:
        return slice(2 * self.vocab, 3 * self.vocab)

    @property
    def position(self) -> slice:
        return slice(3 * self.vocab, 3 * self.vocab + self.seq_len)

    @property
    def d_model(self) -> int:
        return 3 * self.vocab + self.seq_len

    @property
    def d_head(self) -> int:
        return max(self.vocab, self.seq_len)


def hand_built_config(vocab: int = 32, seq_len: int = 45) -> InductionConfig:
    """The :class:`InductionConfig` of the hand-built model: 2 layers of 1 head, wide enough for one-hot slots."""
    layout = HandBuiltLayout(vocab, seq_len)
    return InductionConfig(
        n_layers=2,
        n_heads=1,
        d_model=layout.d_model,
        d_head=layout.d_head,
        vocab=vocab,
        seq_len=seq_len,
        min_repeat=min(5, (seq_len - 1) // 2),
        max_repeat=(seq_len - 1) // 2,
        prefix_segment=min(12, (seq_len - 1) // 4, vocab - 1),
    )


def set_head(
    model: TransformerBridge,
    layer: int,
    head: int,
    *,
    W_Q: torch.Tensor | None = None,
    b_Q: torch.Tensor | None = None,
    W_K: torch.Tensor | None = None,
    b_K: torch.Tensor | None = None,
    W_V: torch.Tensor | None = None,
    W_O: torch.Tensor | None = None,
) -> None:
    """Overwrite one head's weights, given in transformer_lens' orientation.

    Args:
        W_Q, W_K, W_V: ``(d_model, d_head)``: a query is ``resid @ W_Q + b_Q``.
        b_Q, b_K: ``(d_head,)``.
        W_O: ``(d_head, d_model)``: the head writes ``z @ W_O`` into the residual stream.
    """
    validate.index("layer", layer, model.cfg.n_layers)
    validate.index("head", head, model.cfg.n_heads)
    d_head = model.cfg.d_head
    rows = slice(head * d_head, (head + 1) * d_head)
    attn = model.blocks[layer].attn
    with torch.no_grad():
        for name, weight, bias in (("q", W_Q, b_Q), ("k", W_K, b_K), ("v", W_V, None)):
            linear = getattr(attn, name)
            if weight is not None:
                linear.weight[rows] = weight.T.to(linear.weight)
            if bias is not None:
                linear.bias[rows] = bias.to(linear.bias)
        if W_O is not None:
            attn.o.weight[:, rows] = W_O.T.to(attn.o.weight)


def embedding_weights(layout: HandBuiltLayout, strength: float = 20.0) -> dict[str, torch.Tensor]:
    """Embeddings and unembedding of the hand-built model.

    Returns:
        ``W_E (vocab, d_model)``: token ``t`` -> one-hot in the ``token`` slot;
        ``W_pos (seq_len, d_model)``: position ``i`` -> one-hot in the ``position`` slot;
        ``W_U (d_model, vocab)``: the ``output`` slot of token ``t`` -> logit ``strength / 2`` for ``t``.
    """
    v, n, d = layout.vocab, layout.seq_len, layout.d_model
    tok, pos = torch.arange(v), torch.arange(n)
    W_E = torch.zeros(v, d)
    W_E[tok, layout.token.start + tok] = 1.0
    W_pos = torch.zeros(n, d)
    W_pos[pos, layout.position.start + pos] = 1.0
    W_U = torch.zeros(d, v)
    W_U[layout.output.start + tok, tok] = strength / 2
    return {"W_E": W_E, "W_pos": W_pos, "W_U": W_U}


def previous_token_head_weights(layout: HandBuiltLayout, strength: float = 20.0) -> dict[str, torch.Tensor]:
    """Layer 0's previous-token head, which works through the positional embeddings alone.

    Returns:
        ``W_Q (d_model, d_head)``: the ``position`` slot of ``i`` -> head dimension ``i``, times
        ``strength * sqrt(d_head)`` (attention scores are divided by ``sqrt(d_head)``);
        ``W_K (d_model, d_head)``: the ``position`` slot of ``j`` -> head dimension ``j + 1``, so query
        ``i`` meets key ``j`` exactly when ``j == i - 1`` (score ``strength``, 0 elsewhere);
        ``W_V (d_model, d_head)``: the ``token`` slot of ``t`` -> head dimension ``t``;
        ``W_O (d_head, d_model)``: head dimension ``t`` -> the ``previous`` slot of ``t``.
    """
    v, n, d, dh = layout.vocab, layout.seq_len, layout.d_model, layout.d_head
    tok, pos = torch.arange(v), torch.arange(n)
    W_Q = torch.zeros(d, dh)
    W_Q[layout.position.start + pos, pos] = strength * math.sqrt(dh)
    W_K = torch.zeros(d, dh)
    W_K[layout.position.start + pos[:-1], pos[1:]] = 1.0
    W_V = torch.zeros(d, dh)
    W_V[layout.token.start + tok, tok] = 1.0
    W_O = torch.zeros(dh, d)
    W_O[tok, layout.previous.start + tok] = 1.0
    return {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}


def induction_head_weights(
    layout: HandBuiltLayout,
    strength: float = 20.0,
) -> dict[str, torch.Tensor]:
    """Layer 1's induction head: K-composition and a copying OV circuit.

    Its keys read what the previous-token head of layer 0 wrote.

    Returns:
        ``W_Q``: the ``token`` slot of the current token ``A`` -> head
        dimension ``A`` (times ``strength * sqrt(d_head)``), plus a bias
        ``b_Q`` on dimension 0 for every query;
        ``W_K``: the ``previous`` slot of ``A`` -> dimension ``A``: key
        ``j`` matches when the token *before* ``j`` was ``A`` (score
        ``strength``); BOS as a predecessor matches nothing; the
        ``position`` slot of 0 (the BOS token) -> dimension 0 at one half,
        so BOS scores ``strength / 2`` for every query: where ``A`` was not
        seen before, the head rests on BOS;
        ``W_V``: the ``token`` slot of ``B`` -> dimension ``B`` for every
        content token (BOS carries nothing);
        ``W_O``: dimension ``B`` -> the ``output`` slot of ``B``, which the
        unembedding turns into a vote for ``B``.
    """
    v, d, dh = layout.vocab, layout.d_model, layout.d_head
    # content tokens; dimension 0 is BOS's, the resting place
    tok = torch.arange(1, v)
    scale = strength * math.sqrt(dh)
    W_Q = torch.zeros(d, dh)
    W_Q[layout.token.start + tok, tok] = scale
    b_Q = torch.zeros(dh)
    b_Q[BOS] = scale
    W_K = torch.zeros(d, dh)
    W_K[layout.previous.start + tok, tok] = 1.0
    W_K[layout.position.start + 0, BOS] = 0.5
    W_V = torch.zeros(d, dh)
    W_V[layout.token.start + tok, tok] = 1.0
    W_O = torch.zeros(dh, d)
    W_O[tok, layout.output.start + tok] = 1.0
    return {"W_Q": W_Q, "b_Q": b_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}


def hand_built_model(
    vocab: int = 32, seq_len: int = 45, strength: float = 20.0, device: torch.device | str | None = None
) -> TransformerBridge:
    """A two-layer attention-only model (one head per layer) whose weights implement an induction circuit.

    Every weight is zero except those set by :func:`embedding_weights`,
    :func:`previous_token_head_weights` (layer 0) and :func:`induction_head_weights` (layer 1).
    ``strength`` is the attention score of a match before the softmax (larger = sharper attention).
    """
    if not strength > 0:
        raise ValueError(f"strength must be positive, got {strength!r}")
    config = hand_built_config(vocab, seq_len)
    layout = HandBuiltLayout(vocab, seq_len)
    model = make_model(config, seed=0, device=device)
    embed = embedding_weights(layout, strength)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        native = model.original_model
        native.get_parameter("tok_embed.weight").copy_(embed["W_E"])
        native.get_parameter("pos.weight").copy_(embed["W_pos"])
        native.get_parameter("head.weight").copy_(embed["W_U"].T)
    set_head(model, 0, 0, **previous_token_head_weights(layout, strength))
    set_head(model, 1, 0, **induction_head_weights(layout, strength))
    return model
