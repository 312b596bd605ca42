"""Fuzzy induction: a repeat in another "language", and the head that copies across it (chapter 9).

Olsson et al.'s fourth argument is that induction heads also copy "fuzzily": the earlier occurrence is not the
same token but an equivalent one (a word and its translation). The toy here: after BOS, the content tokens form
two languages of ``language`` tokens each (``1 .. language`` and ``language + 1 .. 2 * language``), and a fixed
word-for-word bijection, :func:`translation`, maps each token to its translation in the other language (an
involution: translating twice gives the token back). A sequence is BOS, a random segment in one language (its
length drawn per sample, as in :mod:`lib.induction.sequences`, so no fixed offset solves it), then the segment
repeated until the sequence is full: with probability ``translated_share`` each copy is the translation of the
copy before it (a *translated repeat*), else every copy is the same (an *exact repeat*).

Where a token's translation appeared earlier but the token itself did not (:func:`translated_mask`), only a head
that matches across the bijection can predict the next token; where the token itself appeared (the
:func:`lib.induction.sequences.repeat_mask` of the exact repeats), chapter 5's exact induction head can.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn

from lib.core import validate
from lib.core.device import check_device
from lib.core.heads import Head, all_heads
from lib.core.shipped import DATA
from lib.core.tokens import BOS, EVAL_SEED
from lib.core.train import History, TrainConfig, train
from lib.induction import models, sequences
from lib.induction.ablation import ablated_losses, each_head
from lib.induction.circuits import full_ov_circuit
from lib.induction.scores import (
    attention_patterns,
    masked_mean,
    per_token_loss,
    prefix_matching_mask,
    prefix_matching_score,
)
from lib.induction.sequences import InductionConfig, seeded_generator

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

TRANSLATION_SEED = 39
"""Seeds the bijection between the two languages: part of the task, so fixed (``CIRCUITS_SEED`` does not move it)."""


@dataclass(frozen=True)
class FuzzyConfig:
    """The task and the model; the defaults are chapter 5's model on a vocabulary of two languages.

    Attributes:
        language: tokens per language; the vocabulary is BOS plus two languages, ``1 + 2 * language`` tokens.
        translated_share: the probability that a sequence's repeats are translated (else they are exact); 0 gives
            chapter 5's task on this vocabulary (the control that never sees a translation).
        n_layers, n_heads, d_model, d_head, seq_len, min_repeat, max_repeat, init_std: as in
            :class:`lib.induction.sequences.InductionConfig`; a segment's tokens are distinct and of one language,
            so ``max_repeat <= language``.
    """

    language: int = 32
    translated_share: float = 0.5
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    d_head: int = 16
    seq_len: int = 49
    min_repeat: int = 5
    max_repeat: int = 24
    init_std: float | None = None

    def __post_init__(self) -> None:
        validate.int_at_least("language", self.language, 2, "a segment of two distinct tokens")
        validate.unit_interval("translated_share", self.translated_share)
        if self.max_repeat > self.language:
            raise ValueError(
                f"language={self.language} is too small for segments of up to max_repeat={self.max_repeat} distinct "
                f"tokens of one language; need language >= {self.max_repeat}"
            )
        _ = self.induction  # validates the shared fields

    @property
    def vocab(self) -> int:
        """BOS plus two languages."""
        return 1 + 2 * self.language

    @property
    def induction(self) -> InductionConfig:
        """The model and repeat lengths as an :class:`InductionConfig` (for :func:`lib.induction.models.make_model`)."""
        return InductionConfig(
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_model=self.d_model,
            d_head=self.d_head,
            vocab=self.vocab,
            seq_len=self.seq_len,
            min_repeat=self.min_repeat,
            max_repeat=self.max_repeat,
            prefix_segment=min(12, self.max_repeat, (self.seq_len - 1) // 4),
            init_std=self.init_std,
        )

    def with_layers(self, n_layers: int) -> FuzzyConfig:
        """The same config with another number of layers (e.g. the one-layer control)."""
        return replace(self, n_layers=n_layers)


def translation(language: int, seed: int = TRANSLATION_SEED) -> torch.Tensor:
    """The word-for-word bijection: ``(1 + 2 * language,) int64``, entry ``t`` is the translation of token ``t``.

    A random pairing of the first language's tokens with the second's, both ways round; BOS translates to itself.
    """
    validate.int_at_least("language", language, 2, "a segment of two distinct tokens")
    partner = torch.randperm(language, generator=seeded_generator(seed)) + 1 + language
    table = torch.zeros(1 + 2 * language, dtype=torch.int64)
    table[1 : 1 + language] = partner
    table[partner] = torch.arange(1, 1 + language)
    return table


def fuzzy_sequences(
    batch: int,
    generator: torch.Generator,
    config: FuzzyConfig = FuzzyConfig(),
    translated: bool | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """BOS, a segment of distinct tokens of one random language, then copies of it until the sequence is full.

    Args:
        translated: ``True``: every sequence a translated repeat (copy ``k`` is the translation of copy ``k - 1``);
            ``False``: every sequence an exact repeat; ``None``: translated with probability ``translated_share``.

    Returns:
        tokens: ``(batch, seq_len) int64``, drawn on ``generator.device`` and moved to ``device``.
        period: ``(batch,) int64`` segment lengths, in ``[min_repeat, max_repeat]``.
        is_translated: ``(batch,) bool``.
    """
    validate.positive_int("batch", batch)
    target = check_device(device)
    on = generator.device
    period = torch.randint(config.min_repeat, config.max_repeat + 1, (batch,), generator=generator, device=on)
    # distinct tokens of the first language
    segment = sequences.distinct_tokens(batch, config.max_repeat, 1, config.language + 1, generator)
    second = torch.rand(batch, generator=generator, device=on) < 0.5
    flip = torch.rand(batch, generator=generator, device=on) < config.translated_share
    is_translated = flip if translated is None else torch.full((batch,), translated, device=on)
    position = torch.arange(config.seq_len - 1, device=on)[None, :]
    body = segment.gather(1, position % period[:, None])
    copy = position // period[:, None]  # which copy each position is in
    other = second[:, None] ^ (is_translated[:, None] & (copy % 2 == 1))  # in the second language?
    body = torch.where(other, translation(config.language).to(on)[body], body)
    tokens = torch.cat([torch.full((batch, 1), BOS, dtype=torch.int64, device=on), body], dim=1)
    out = (tokens, period, is_translated)
    return out if target is None else tuple(t.to(target) for t in out)  # type: ignore[return-value]


def make_batch_fn(config: FuzzyConfig = FuzzyConfig()) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A ``make_batch(batch_size, generator) -> (batch, seq_len) int64`` for :func:`lib.core.train.train`."""

    def make_batch(batch_size: int, generator: torch.Generator) -> torch.Tensor:
        return fuzzy_sequences(batch_size, generator, config)[0]

    return make_batch


def _earlier(tokens: torch.Tensor, sought: torch.Tensor) -> torch.Tensor:
    """``(batch, seq) bool``: ``sought[b, p]`` occurs in ``tokens[b, :p]``."""
    seq = tokens.shape[1]
    before = torch.ones(seq, seq, dtype=torch.bool, device=tokens.device).tril(-1)  # (p, j): j < p
    return ((tokens[:, None, :] == sought[:, :, None]) & before).any(dim=-1)


def repeat_masks(tokens: torch.Tensor, translate: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Which predictions each kind of induction can make, aligned with :func:`lib.induction.scores.per_token_loss`.

    Args:
        tokens: ``(batch, seq) int64``. translate: ``(vocab,) int64``, :func:`translation`.

    Returns:
        ``(exact, translated)``, each ``(batch, seq - 1) bool``: entry ``p`` (predicting ``tokens[:, p + 1]``) is in
        ``exact`` when the current token ``tokens[:, p]`` occurred before, and in ``translated`` when only its
        translation did, so only a head that matches across languages points to the answer.
    """
    validate.token_range(validate.token_batch(tokens), translate.shape[0])
    content = tokens != BOS
    seen = _earlier(tokens, tokens) & content
    seen_translated = _earlier(tokens, translate.to(tokens.device)[tokens]) & content
    return seen[:, :-1], (seen_translated & ~seen)[:, :-1]


def cross_prefix_matching_mask(tokens: torch.Tensor, translate: torch.Tensor) -> torch.Tensor:
    """Where a fuzzy induction head should look: keys that follow an earlier occurrence of the query's translation.

    ``mask[b, i, j]`` is True when ``1 <= j <= i`` and ``tokens[b, j - 1] == translate[tokens[b, i]]``: chapter 5's
    :func:`lib.induction.scores.prefix_matching_mask` with the earlier occurrence being the translation.

    Returns:
        ``(batch, seq, seq) bool``.
    """
    batch, seq = validate.token_range(validate.token_batch(tokens), translate.shape[0]).shape
    sought = translate.to(tokens.device)[tokens]  # (batch, i)
    mask = torch.zeros(batch, seq, seq, dtype=torch.bool, device=tokens.device)
    mask[:, :, 1:] = tokens[:, None, :-1] == sought[:, :, None]
    return mask & torch.ones(seq, seq, dtype=torch.bool, device=tokens.device).tril()


def cross_prefix_matching_score(pattern: torch.Tensor, tokens: torch.Tensor, translate: torch.Tensor) -> torch.Tensor:
    """Mean attention from each token to the tokens that followed earlier occurrences of its translation.

    Averaged over the query positions whose translation occurred earlier and the token itself did not (others are
    skipped), so a head that matches the same token is not confused with one that matches its translation.

    Args:
        pattern: ``(..., batch, heads, query, key)`` attention (:func:`lib.induction.scores.attention_patterns`).
        tokens: ``(batch, seq) int64``. translate: ``(vocab,) int64``, :func:`translation`.

    Returns:
        ``(..., heads)``, each in ``[0, 1]``.
    """
    validate.float_tensor("pattern", pattern, "(..., batch, heads, query, key)", 4)
    mask = cross_prefix_matching_mask(tokens, translate)  # (batch, q, k)
    if pattern.shape[-4] != tokens.shape[0] or pattern.shape[-2:] != mask.shape[1:]:
        raise ValueError(f"pattern {tuple(pattern.shape)} does not match tokens (batch, seq) {tuple(tokens.shape)}")
    exact = prefix_matching_mask(tokens)
    has_match = mask.any(dim=-1) & ~exact.any(dim=-1)  # (batch, q)
    if not has_match.any():
        raise ValueError("no token's translation (without the token itself) occurs earlier: the score is undefined")
    attended = (pattern * mask[:, None].to(pattern.dtype)).sum(dim=-1)  # (..., batch, heads, q)
    weights = has_match[:, None, :].to(pattern.dtype)
    return (attended * weights).sum(dim=-1).sum(dim=-2) / has_match.sum()


def ov_top_shares(model: TransformerBridge, head: Head, translate: torch.Tensor) -> tuple[float, float]:
    """What the head's full OV circuit ``W_E W_V W_O W_U`` predicts most for each content token ``B`` it attends to.

    Returns:
        ``(translation share, copy share)``: the share of the content tokens whose largest logit is their
        translation (a fuzzy copier's signature), and the share whose largest logit is the token itself (an exact
        copier's).
    """
    circuit = full_ov_circuit(model, head)  # (vocab, vocab) on the CPU
    if translate.shape != (circuit.shape[0],):
        raise ValueError(f"translate must be ({circuit.shape[0]},), one entry per token, got {tuple(translate.shape)}")
    content = torch.arange(1, circuit.shape[0])
    top = circuit[content].argmax(dim=-1)
    return (top == translate.cpu()[content]).float().mean().item(), (top == content).float().mean().item()


class FuzzyEvalSets(NamedTuple):
    """The fixed evaluation data of chapter 9 (see :func:`eval_sets`)."""

    tokens: torch.Tensor  # (n, seq_len) int64: the training distribution
    exact: torch.Tensor  # (n, seq_len - 1) bool: predictions an exact induction head can make
    translated: torch.Tensor  # (n, seq_len - 1) bool: predictions only a cross-language head can make
    cross_prefix: torch.Tensor  # (64, seq_len) int64: translated repeats of 5-12 tokens (cross-language score)
    same_prefix: torch.Tensor  # (64, seq_len) int64: exact repeats of 5-12 tokens (chapter 5's prefix score)


def eval_sets(
    config: FuzzyConfig = FuzzyConfig(), device: torch.device | str = "cpu", n: int = 256, seed: int = EVAL_SEED
) -> FuzzyEvalSets:
    """Chapter 9's evaluation sets, drawn in one fixed order from a CPU generator seeded with ``seed`` (by default
    ``EVAL_SEED``; the shipped log was measured on ``SHIPPED_EVAL_SEED``'s).

    The prefix-matching sets repeat segments of 5 to 12 tokens (chapter 5's
    :attr:`~lib.induction.sequences.InductionConfig.prefix_periods`, at the defaults) at least four times.
    """
    validate.positive_int("n", n)
    target = check_device(device)
    generator = seeded_generator(seed)
    tokens = fuzzy_sequences(n, generator, config, device=target)[0]
    exact, translated = repeat_masks(tokens, translation(config.language))
    shortest, longest = config.induction.prefix_periods
    short = replace(config, min_repeat=shortest, max_repeat=longest)
    cross = fuzzy_sequences(64, generator, short, translated=True, device=target)[0]
    same = fuzzy_sequences(64, generator, short, translated=False, device=target)[0]
    return FuzzyEvalSets(tokens, exact, translated, cross, same)


def head_measures(model: TransformerBridge, sets: FuzzyEvalSets, translate: torch.Tensor) -> dict[str, torch.Tensor]:
    """What chapter 9 follows over training, on the CPU.

    Returns:
        ``"exact loss"`` and ``"translated loss"`` (scalars, nats): the mean loss on the predictions of
        ``sets.exact`` and ``sets.translated``; ``"cross prefix matching"`` (:func:`cross_prefix_matching_score` on
        ``sets.cross_prefix``) and ``"prefix matching"`` (chapter 5's, on ``sets.same_prefix``), each
        ``(n_layers, n_heads)``.
    """
    with torch.inference_mode():
        loss = per_token_loss(model, sets.tokens)
        cross = attention_patterns(model, sets.cross_prefix)
        same = attention_patterns(model, sets.same_prefix)
        return {
            "exact loss": masked_mean(loss, sets.exact).cpu(),
            "translated loss": masked_mean(loss, sets.translated).cpu(),
            "cross prefix matching": cross_prefix_matching_score(cross, sets.cross_prefix, translate).cpu(),
            "prefix matching": prefix_matching_score(same, sets.same_prefix).cpu(),
        }


def ov_shares(model: TransformerBridge, translate: torch.Tensor) -> torch.Tensor:
    """:func:`ov_top_shares` of every head.

    Returns:
        ``(2, n_layers, n_heads)``: the translation shares, then the copy shares.
    """
    shares = torch.tensor([ov_top_shares(model, head, translate) for head in all_heads(model)])  # (heads, 2)
    return shares.T.reshape(2, model.cfg.n_layers, model.cfg.n_heads)


def ablation_effects(model: TransformerBridge, sets: FuzzyEvalSets) -> torch.Tensor:
    """Loss on exact and on translated repeats with nothing removed, then with each head removed alone.

    Full ablation, the head's output set to zero (:func:`lib.induction.ablation.ablated_losses` over
    :func:`lib.induction.ablation.each_head`).

    Returns:
        ``(1 + n_layers * n_heads, 2)`` on the CPU: row 0 the intact model, row ``1 + layer * n_heads + head`` that
        head removed; column 0 the mean loss on ``sets.exact``, column 1 on ``sets.translated``.
    """
    losses = ablated_losses(model, sets.tokens, each_head(model))  # (ablations, batch, seq - 1)
    return torch.stack([masked_mean(losses, sets.exact), masked_mean(losses, sets.translated)], dim=-1).cpu()


TRAINING = TrainConfig(
    steps=2500, lr=3e-3, batch_size=32, checkpoint_steps=tuple(range(0, 2501, 50)), seed=0, desc="training"
)
"""Chapter 9's runs: chapter 5's settings (:data:`lib.induction.models.TRAINING`) for 2,500 steps, a checkpoint
every 50."""


def train_model(
    config: FuzzyConfig,
    seed: int,
    *,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
    device: torch.device | str | None = None,
) -> tuple[TransformerBridge, History]:
    """Chapter 5's attention-only model (:func:`lib.induction.models.make_model`) trained on :func:`fuzzy_sequences`.

    ``seed`` seeds the initial weights and the batches alike.
    """
    model = models.make_model(config.induction, seed=seed, device=device)
    history = train(
        model, make_batch_fn(config), models.training_loss, replace(train_config, seed=seed), evaluate=evaluate
    )
    return model, history


class Run(NamedTuple):
    """A shipped training run: enough to rebuild the model at each of its saved checkpoints."""

    config: FuzzyConfig
    seed: int
    checkpoints: dict[int, dict[str, torch.Tensor]]

    def model_at(self, step: int, device: torch.device | str | None = None) -> TransformerBridge:
        """A float32 model holding the checkpoint of ``step``, in eval mode."""
        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step}; shipped: {sorted(self.checkpoints)}")
        model = models.make_model(self.config.induction, seed=self.seed, device=device)
        model.load_state_dict({k: v.float() for k, v in self.checkpoints[step].items()})
        return model.eval()


SHIPPED = DATA / "fuzzy-seed0.pt"
"""Chapter 9's models (seed 0): the fuzzy-task model, the exact-only control and the one-layer control, written by
``bench/fuzzy_train.py --save``."""

LOG = DATA / "fuzzy_runs.json"
"""Every seed's measurements over training, written by ``bench/fuzzy_train.py --json``."""


def save_runs(path: Path, runs: Mapping[str, Run]) -> None:
    """Write named runs to ``path`` (plain values and float16 tensors, loadable with ``weights_only=True``)."""
    torch.save(
        {
            name: {
                "config": asdict(run.config),
                "seed": run.seed,
                "checkpoints": {
                    int(step): {k: v.detach().to("cpu", torch.float16) for k, v in state.items()}
                    for step, state in run.checkpoints.items()
                },
            }
            for name, run in runs.items()
        },
        path,
    )


def load_runs(path: Path = SHIPPED) -> dict[str, Run]:
    """The runs saved at ``path`` by :func:`save_runs` (by default the shipped ones, :data:`SHIPPED`)."""
    if not Path(path).is_file():
        raise ValueError(f"no runs at {path}: run bench/fuzzy_train.py --save {path}")
    data = torch.load(path, map_location="cpu", weights_only=True)
    return {
        name: Run(FuzzyConfig(**run["config"]), run["seed"], {int(s): v for s, v in run["checkpoints"].items()})
        for name, run in data.items()
    }
