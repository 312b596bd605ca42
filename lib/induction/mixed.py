"""A task where in-context learning is more than the repeat (chapter 7).

On :func:`lib.induction.sequences.repeated_sequences` every late token is a repeat, so the ICL score (late minus
early loss) *is* the induction task. Here each sequence has two sources of in-context information:

- **one repeated segment**: ``r`` distinct tokens that appear once and later again, so from its second token on a
  repeat is predictable by induction ("what followed this token last time");
- **unigram stretches**: everything else is drawn independently from the sequence's own distribution over a small
  random subset of the vocabulary (flat-Dirichlet weights), so a head that averages over the tokens seen so far
  predicts late tokens better than early ones, with no repeat and no induction.

Layout after BOS: ``stretch | segment (r) | stretch | segment again (r) | ... | stretch (rest)``, with the segment
appearing ``copies`` times and ``r`` and the stretches' lengths drawn per sequence. The segment's tokens lie outside
the sequence's unigram subset, so every earlier occurrence of a segment token is followed by the same token. ICL is
measured as Olsson et al. do (loss at late tokens minus loss at early tokens), separately on the late positions that
are repeats and on those that are not (:func:`icl_by_kind`): the two can come apart, and an ablation can remove one
without the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

import torch
from torch import nn

from lib.core import seeds, validate
from lib.core.device import check_device, to_device
from lib.core.heads import Head, check_heads
from lib.core.tokens import BOS, EVAL_SEED
from lib.core.train import History, TrainConfig, train
from lib.induction import models, smear
from lib.induction.ablation import Kind, Replacement, ablated_losses, fraction_removed
from lib.induction.scores import (
    attention_patterns,
    masked_mean,
    over_checkpoints,
    per_token_loss,
    prefix_matching_score,
)
from lib.induction.sequences import InductionConfig, seeded_generator

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


PositionKind = Literal["repeated", "non-repeated"]

POSITION_KINDS: tuple[PositionKind, ...] = get_args(PositionKind)
"""The late positions :func:`icl_by_kind` scores: repeats (induction can predict them) and unigram draws."""


@dataclass(frozen=True)
class MixedConfig:
    """The mixed task; the defaults are chapter 7's.

    Attributes:
        vocab: vocabulary size including BOS ``0``; content tokens are ``1 .. vocab - 1``.
        seq_len: tokens per sequence, BOS included.
        support: how many tokens each sequence's unigram distribution puts weight on.
        min_segment, max_segment: range of the repeated segment's length ``r`` (drawn per sequence).
        min_stretch, max_stretch: range of the length of the unigram stretch before each copy (drawn per
            stretch); the last stretch fills the rest (at least one token).
        copies: how often the segment appears (the first time and ``copies - 1`` repeats).
    """

    vocab: int = 64
    seq_len: int = 49
    support: int = 8
    min_segment: int = 5
    max_segment: int = 10
    min_stretch: int = 2
    max_stretch: int = 5
    copies: int = 3

    def __post_init__(self) -> None:
        for name in ("seq_len", "support", "min_segment", "max_segment", "max_stretch"):
            validate.positive_int(name, getattr(self, name))
        validate.int_at_least("min_segment", self.min_segment, 2, "a segment whose second copy has a predictable token")
        validate.int_at_least("min_stretch", self.min_stretch, 2, "an early position with a token before it")
        for low, high in (("min_segment", "max_segment"), ("min_stretch", "max_stretch")):
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"{low} ({getattr(self, low)}) must be <= {high} ({getattr(self, high)})")
        validate.int_at_least("copies", self.copies, 2, "a segment and at least one repeat")
        longest = 1 + self.copies * (self.max_stretch + self.max_segment) + 1
        if longest > self.seq_len:
            raise ValueError(
                f"seq_len={self.seq_len} is too short: BOS, {self.copies} stretches of up to {self.max_stretch} and "
                f"{self.copies} copies of up to {self.max_segment} and one last token need {longest}; "
                f"allowed seq_len >= {longest}"
            )
        if self.support + self.max_segment > self.vocab - 1:
            raise ValueError(
                f"vocab={self.vocab} is too small: support ({self.support}) and a segment of up to {self.max_segment} "
                f"tokens outside it need vocab >= {self.support + self.max_segment + 1}"
            )

    @property
    def early(self) -> range:
        """Loss positions of the early term: predicting tokens ``2 .. min_stretch``, always in the first stretch."""
        return range(1, self.min_stretch)

    @property
    def late_start(self) -> int:
        """First loss position of the late term (the second half of the sequence)."""
        return (self.seq_len - 1) // 2

    def model_config(self, n_heads: int = 8, n_layers: int = 2) -> InductionConfig:
        """The :class:`InductionConfig` of a model for this task: its vocabulary and context; the repeat fields,
        capped to fit, serve only the prefix-matching and copying sets (:func:`lib.induction.sequences.eval_sets`)."""
        defaults, half = InductionConfig(), (self.seq_len - 1) // 2
        return InductionConfig(
            n_layers=n_layers,
            n_heads=n_heads,
            vocab=self.vocab,
            seq_len=self.seq_len,
            min_repeat=min(defaults.min_repeat, half),
            max_repeat=min(defaults.max_repeat, half, self.vocab - 1),
            prefix_segment=min(defaults.prefix_segment, (self.seq_len - 1) // defaults.prefix_repeats, self.vocab - 1),
        )


class MixedBatch(NamedTuple):
    """Sequences of the mixed task and what kind of prediction each loss position is."""

    tokens: torch.Tensor  # (batch, seq_len) int64, tokens[:, 0] == BOS
    repeated: torch.Tensor  # (batch, seq_len - 1) bool: the next token is a repeat that induction predicts
    unigram: torch.Tensor  # (batch, seq_len - 1) bool: the next token is a draw from the unigram distribution


def mixed_sequences(
    batch: int,
    generator: torch.Generator,
    config: MixedConfig = MixedConfig(),
    device: torch.device | str | None = None,
) -> MixedBatch:
    """Draw ``batch`` sequences of the mixed task (module docstring) on ``generator.device`` (the CPU for
    :func:`lib.induction.sequences.seeded_generator`'s), then move them to ``device`` (default: left there).

    Loss position ``p`` predicts ``tokens[:, p + 1]``. ``repeated`` is True where that token is a repeat's
    ``i + 1``-th token and the current token its ``i``-th (seen before, followed then by the answer); ``unigram``
    where it is a unigram draw. Neither holds where the next token is the segment's first occurrence or a repeat's
    first token (nothing in the context points to it).
    """
    validate.positive_int("batch", batch)
    target = check_device(device)
    device = generator.device
    n = config.seq_len - 1

    r = torch.randint(config.min_segment, config.max_segment + 1, (batch, 1), generator=generator, device=device)
    stretch = torch.randint(
        config.min_stretch, config.max_stretch + 1, (batch, config.copies), generator=generator, device=device
    )
    order = torch.rand((batch, config.vocab - 1), generator=generator, device=device).argsort(dim=1) + 1
    subset, segment = order[:, : config.support], order[:, config.support : config.support + config.max_segment]
    weights = -torch.rand((batch, config.support), generator=generator, device=device).log()  # flat Dirichlet
    draws = subset.gather(1, torch.multinomial(weights, n, replacement=True, generator=generator))
    j = torch.arange(n, device=device)[None, :]  # body index; token position j + 1
    in_segment = torch.zeros((batch, n), dtype=torch.bool, device=device)
    repeated = torch.zeros_like(in_segment)
    offset = torch.zeros_like(j.expand(batch, n))
    for copy in range(config.copies):
        start = stretch[:, : copy + 1].sum(dim=1, keepdim=True) + copy * r
        inside = (j >= start) & (j < start + r)
        in_segment |= inside
        offset = torch.where(inside, j - start, offset)
        if copy > 0:  # loss position p predicts body index p: predictable from a copy's second token on
            repeated |= inside & (j > start)
    body = torch.where(in_segment, segment.gather(1, offset), draws)
    tokens = torch.cat([torch.full((batch, 1), BOS, dtype=torch.int64, device=device), body], dim=1)
    drawn = MixedBatch(tokens, repeated, ~in_segment)
    return drawn if target is None else to_device(drawn, target)


def make_batch_fn(config: MixedConfig = MixedConfig()) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A ``make_batch(batch_size, generator) -> (batch, seq_len) int64`` for :func:`lib.core.train.train`."""

    def make_batch(batch_size: int, generator: torch.Generator) -> torch.Tensor:
        return mixed_sequences(batch_size, generator, config).tokens

    return make_batch


def eval_batch(config: MixedConfig = MixedConfig(), device: torch.device | str = "cpu", n: int = 512) -> MixedBatch:
    """The fixed evaluation set of the mixed task: ``n`` sequences from a CPU generator seeded with ``EVAL_SEED``,
    moved to ``device`` (the same set on every device)."""
    validate.positive_int("n", n)
    return mixed_sequences(n, seeded_generator(EVAL_SEED), config, check_device(device))


def late_masks(data: MixedBatch, config: MixedConfig = MixedConfig()) -> dict[PositionKind, torch.Tensor]:
    """The late loss positions of each kind: ``(batch, seq_len - 1) bool`` masks, keyed by :data:`POSITION_KINDS`."""
    late = torch.arange(config.seq_len - 1, device=data.tokens.device) >= config.late_start
    return {"repeated": data.repeated & late, "non-repeated": data.unigram & late}


def loss_terms(
    loss: torch.Tensor, data: MixedBatch, config: MixedConfig = MixedConfig()
) -> dict[Literal["early"] | PositionKind, torch.Tensor]:
    """The two terms of :func:`icl_by_kind`: the mean loss over :attr:`MixedConfig.early` (unigram positions at the
    start of every sequence) and over the late positions of each kind (:func:`late_masks`), pooled over the sequences.

    Args:
        loss: ``(..., batch, seq_len - 1)`` per-token loss on ``data.tokens`` (e.g. stacked over ablations).

    Returns:
        ``{"early", "repeated", "non-repeated"}`` -> ``loss.shape[:-2]``, nats.
    """
    if loss.shape[-2:] != data.repeated.shape:
        raise ValueError(
            f"loss (..., batch, seq - 1) {tuple(loss.shape)} does not match the data's {tuple(data.repeated.shape)}"
        )
    terms: dict[Literal["early"] | PositionKind, torch.Tensor] = {"early": loss[..., config.early].mean(dim=(-2, -1))}
    terms.update((kind, masked_mean(loss, mask)) for kind, mask in late_masks(data, config).items())
    return terms


def icl_by_kind(
    loss: torch.Tensor, data: MixedBatch, config: MixedConfig = MixedConfig()
) -> dict[PositionKind, torch.Tensor]:
    """Olsson et al.'s ICL score, late minus early loss (:func:`loss_terms`), on the late repeated and the late
    non-repeated positions. Negative = in-context learning, as everywhere in the book.

    Args:
        loss: ``(..., batch, seq_len - 1)`` per-token loss on ``data.tokens`` (e.g. stacked over ablations).

    Returns:
        ``{"repeated", "non-repeated"}`` -> ``loss.shape[:-2]``.
    """
    terms = loss_terms(loss, data, config)
    return {kind: terms[kind] - terms["early"] for kind in POSITION_KINDS}


TRAINING = TrainConfig(
    steps=1500, lr=1e-2, batch_size=32, checkpoint_steps=tuple(range(0, 1501, 100)), desc="mixed task"
)
"""The mixed task's training run (``bench/mixed_heads.py``): 1,500 AdamW steps at lr 1e-2, batches of 32."""


def train_model(
    config: MixedConfig = MixedConfig(),
    seed: int = seeds.seed(0),
    *,
    n_heads: int = 8,
    n_layers: int = 2,
    smeared: bool = False,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
    device: torch.device | str | None = None,
) -> tuple[TransformerBridge, History]:
    """An attention-only model (:func:`lib.induction.models.make_model`; two layers by default, chapter 7's) trained
    on the mixed task; with ``smeared``, every head has smeared keys (:func:`lib.induction.smear.make_model`,
    chapter 6).

    ``seed`` seeds both the weights and the batches, as :func:`lib.induction.models.train_model` does.
    """
    model = smear.make_model(config.model_config(n_heads, n_layers), seed, smeared=smeared, device=device)
    history = train(
        model, make_batch_fn(config), models.training_loss, replace(train_config, seed=seed), evaluate=evaluate
    )
    return model, history


def icl_of(model: nn.Module, data: MixedBatch, config: MixedConfig = MixedConfig()) -> dict[PositionKind, float]:
    """:func:`icl_by_kind` of ``model`` on ``data`` (no gradients), as plain floats: an ``evaluate`` for training."""
    with torch.inference_mode():
        loss = per_token_loss(model, data.tokens)
    return {kind: float(icl) for kind, icl in icl_by_kind(loss, data, config).items()}


def shares_removed(
    clean: Mapping[PositionKind, torch.Tensor], ablated: Mapping[PositionKind, torch.Tensor]
) -> dict[PositionKind, torch.Tensor]:
    """``1 - ICL(ablated) / ICL(clean)`` for each kind of position (:func:`lib.induction.ablation.fraction_removed`)."""
    return {kind: fraction_removed(clean[kind], ablated[kind]) for kind in POSITION_KINDS}


def same_layer_controls(model: TransformerBridge, heads: Sequence[Head]) -> list[list[Head]]:
    """Every set of as many *other* heads of the same layer as ``heads``: the control for ablating ``heads``.

    Args:
        heads: one or more heads, all in one layer, leaving at least as many heads of that layer outside them.

    Returns:
        the sets, in lexicographic order (``C(n_heads - k, k)`` of them for ``k`` heads).
    """
    chosen = check_heads(model, heads)
    layers = {layer for layer, _ in chosen}
    if len(layers) != 1:
        raise ValueError(f"heads must all sit in one layer, got {list(chosen)}")
    (layer,) = layers
    rest = [(layer, h) for h in range(model.cfg.n_heads) if (layer, h) not in chosen]
    if len(rest) < len(chosen):
        raise ValueError(f"layer {layer} has {len(rest)} heads besides {list(chosen)}: too few for a control set")
    return [list(group) for group in combinations(rest, len(chosen))]


class Contrast(NamedTuple):
    """Share of ICL removed by ablating a set of heads and by each control set, by kind of position."""

    heads: dict[PositionKind, torch.Tensor]  # scalar share per kind
    controls: dict[PositionKind, torch.Tensor]  # (n_controls,) share per kind


def ablation_contrast(
    model: TransformerBridge,
    data: MixedBatch,
    heads: Sequence[Head],
    replacement: Replacement = "zero",
    kind: Kind = "full",
    config: MixedConfig = MixedConfig(),
) -> Contrast:
    """The share of ICL (:func:`icl_by_kind`) that ablating ``heads`` removes, beside every same-layer control set
    (:func:`same_layer_controls`), on repeated and non-repeated late positions, in batched passes."""
    controls = same_layer_controls(model, heads)
    losses = ablated_losses(model, data.tokens, [[], list(heads), *controls], kind, replacement=replacement)
    icl = icl_by_kind(losses, data, config)
    clean = {k: v[0] for k, v in icl.items()}
    removed = shares_removed(clean, icl)
    return Contrast({k: v[1] for k, v in removed.items()}, {k: v[2:] for k, v in removed.items()})


def run_path(seed: int) -> Path:
    """Where the shipped run of ``seed`` lives (``lib/data/mixed-8heads-seed{seed}.pt``)."""
    return Path(__file__).resolve().parent.parent / "data" / f"mixed-8heads-seed{validate.seed(seed)}.pt"


SHIPPED = run_path(1)
"""The run chapter 7 loads: :func:`train_model` of the default task, written by ``bench/ablation_sweep.py --seeds N
--save`` (float16 checkpoints; training it takes longer than a chapter may)."""


class Run(NamedTuple):
    """A training run on the mixed task: enough to rebuild the model at every checkpoint."""

    config: MixedConfig
    n_heads: int
    seed: int
    seconds: float  # wall time of the training loop where it was made
    checkpoints: dict[int, dict[str, torch.Tensor]]

    def model_at(self, step: int, device: torch.device | str | None = None) -> TransformerBridge:
        """A float32 model holding the checkpoint of ``step``, in eval mode."""
        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step}; shipped: {sorted(self.checkpoints)}")
        model = models.make_model(self.config.model_config(self.n_heads), seed=self.seed, device=device)
        model.load_state_dict({k: v.float() for k, v in self.checkpoints[step].items()})
        model.eval()
        return model


def save_run(path: Path, run: Run) -> None:
    """Write ``run`` to ``path`` (plain values and float16 tensors, loadable with ``weights_only=True``)."""
    torch.save(
        {
            "config": asdict(run.config),
            "n_heads": run.n_heads,
            "seed": run.seed,
            "seconds": float(run.seconds),
            "checkpoints": {
                int(s): {k: v.detach().to("cpu", torch.float16) for k, v in state.items()}
                for s, state in run.checkpoints.items()
            },
        },
        path,
    )


def load_run(path: Path = SHIPPED) -> Run:
    """The run saved at ``path`` (by default the shipped one, :data:`SHIPPED`)."""
    data = torch.load(path, map_location="cpu", weights_only=True)
    return Run(
        MixedConfig(**data["config"]),
        data["n_heads"],
        data["seed"],
        data["seconds"],
        {int(s): v for s, v in data["checkpoints"].items()},
    )


DATING_CURVES = ("ICL, late repeated positions", "ICL, late non-repeated positions", "prefix matching of the pair")
"""The three curves chapter 5 dates on a mixed-task run (:func:`dating_curves`)."""


def dating_curves(
    run: Run, data: MixedBatch, prefix_tokens: torch.Tensor, device: torch.device | str | None = None
) -> tuple[list[int], dict[str, torch.Tensor], torch.Tensor]:
    """A run's ICL on late repeated and non-repeated positions (:func:`icl_of`) and the layer-1 prefix matching of
    *the pair*, the two layer-1 heads that end highest on it, at each of its checkpoints (chapter 5).

    Args:
        data: the evaluation set (:func:`eval_batch`). prefix_tokens: ``(batch, seq) int64`` the prefix-matching
            set (:func:`lib.induction.sequences.eval_sets`) on ``device``.

    Returns:
        ``(steps, curves, pair)``: the checkpoint steps, :data:`DATING_CURVES` -> ``(K,)`` float tensors on the
        CPU, and the pair's layer-1 head indices ``(2,) int64``.
    """

    model = run.model_at(0, device)

    def measure(_: nn.Module) -> tuple[dict[PositionKind, float], torch.Tensor]:  # `model`, at a checkpoint
        pattern = attention_patterns(model, prefix_tokens)  # (layers, batch, heads, query, key)
        return icl_of(model, data, run.config), prefix_matching_score(pattern, prefix_tokens)[1].cpu()

    checkpoints = {s: {k: v.float() for k, v in state.items()} for s, state in run.checkpoints.items()}
    steps, measured = over_checkpoints(model, checkpoints, measure)
    prefix = torch.stack([p for _, p in measured])  # (K, heads)
    pair = prefix[-1].topk(2).indices
    icl = [torch.tensor([m[kind] for m, _ in measured]) for kind in POSITION_KINDS]
    return steps, dict(zip(DATING_CURVES, [*icl, prefix[:, pair].mean(dim=1)])), pair


DATING = Path(__file__).resolve().parent.parent / "data" / "mixed_dating.json"
""":func:`dating_curves` of the mixed-task runs of seeds 0-2 on the book's evaluation sets, written by
``bench/mixed_dating.py`` (seeds 0 and 2 trained there, seed 1 the shipped run); chapter 5 shows them side by side."""


def load_dating(path: Path = DATING) -> tuple[list[int], dict[int, tuple[torch.Tensor, dict[str, torch.Tensor]]]]:
    """The curves saved at ``path`` (by default :data:`DATING`).

    Returns:
        ``(steps, {seed: (pair (2,) int64, {name: (K,) float}})``, the names :data:`DATING_CURVES`.
    """
    data = json.loads(path.read_text())
    runs = {
        int(seed): (torch.tensor(run["pair"]), {name: torch.tensor(run[name]) for name in DATING_CURVES})
        for seed, run in data["seeds"].items()
    }
    return [int(s) for s in data["steps"]], runs
