"""A family of models on chapter 5's task: does the induction-head phase change come at the same point whatever
the model's size, and does the batch x context product set it? (chapter 10; Olsson et al.'s argument 6, Aoyama et
al. 2025's onset law)

Every member trains like chapter 5's model (:data:`lib.induction.models.TRAINING`: AdamW, lr 3e-3) on the
repeated-random-token task (:mod:`lib.induction.sequences`) and is scored with chapter 5's definitions
(:mod:`lib.induction.scores`, :mod:`lib.induction.dynamics`). A member changes the model's layers, width and heads
(``d_head`` stays 16), or the batch size and context length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from lib.core import shipped, validate
from lib.core.device import check_device
from lib.induction import dynamics, models, scores
from lib.induction.sequences import EvalSets, InductionConfig, eval_sets

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

D_HEAD = 16
"""Every member's head width: adding heads widens the model."""

SHIPPED = shipped.DATA / "size_family.json"
"""The family's runs, as ``bench/size_family.py`` writes them."""

AOYAMA_T = 10**5.7
"""Aoyama et al.'s fitted constant: induction heads form after about ``AOYAMA_T * sqrt(B * C)`` training tokens."""


@dataclass(frozen=True)
class Member:
    """One model of the family and how it trains.

    Attributes:
        n_layers: attention layers (1 is the control that cannot form an induction head).
        d_model: residual width; the model has ``d_model // 16`` heads of width 16.
        batch_size: sequences a step (B).
        seq_len: tokens a sequence, BOS included (the context C).
        steps: training steps.
    """

    n_layers: int = 2
    d_model: int = 64
    batch_size: int = 32
    seq_len: int = 49
    steps: int = 600

    def __post_init__(self) -> None:
        for name in ("n_layers", "d_model", "batch_size", "seq_len", "steps"):
            validate.positive_int(name, getattr(self, name))
        if self.d_model % D_HEAD:
            raise ValueError(f"d_model must be a multiple of the head width {D_HEAD}, got {self.d_model}")
        self.config  # noqa: B018 (validates the task: seq_len long enough for chapter 5's segments)

    @property
    def n_heads(self) -> int:
        return self.d_model // D_HEAD

    @property
    def config(self) -> InductionConfig:
        """Chapter 5's task and model, with this member's shape and context."""
        return replace(
            InductionConfig(),
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_model=self.d_model,
            d_head=D_HEAD,
            seq_len=self.seq_len,
        )

    @property
    def tokens_per_step(self) -> int:
        """B x C."""
        return self.batch_size * self.seq_len

    @property
    def name(self) -> str:
        return f"{self.n_layers}L d{self.d_model} h{self.n_heads} B{self.batch_size} C{self.seq_len}"


def parameter_count(config: InductionConfig) -> int:
    """Trainable parameters of :func:`lib.induction.models.make_model` for ``config``: embeddings, positions,
    unembedding and each layer's four attention matrices with their biases."""
    d, heads, d_head = config.d_model, config.n_heads, config.d_head
    attention = 4 * d * heads * d_head + 3 * heads * d_head + d
    return config.vocab * d + config.seq_len * d + d * config.vocab + config.n_layers * attention


def checkpoint_scores(model: TransformerBridge, sets: EvalSets, seq_len: int) -> dict[str, Any]:
    """The curves the family records at every checkpoint, with chapter 5's definitions.

    Returns:
        ``{"repeated loss": float, "icl": float, "prefix matching": [n_layers], "previous token": [n_layers]}``:
        the loss on repeated tokens (nats), the ICL score (nats, negative = in-context learning), and each layer's
        best head on prefix matching and on the previous-token score.
    """
    loss = scores.per_token_loss(model, sets.tokens, check_ids=False)
    early, late = scores.icl_positions(seq_len)
    prefix = scores.prefix_matching_score(scores.attention_patterns(model, sets.prefix_tokens), sets.prefix_tokens)
    previous = scores.previous_token_score(scores.attention_patterns(model, sets.tokens[:64]))
    return {
        "repeated loss": scores.masked_mean(loss, sets.mask.to(loss.device)).item(),
        "icl": scores.icl_score(loss, early, late).item(),
        "prefix matching": prefix.amax(dim=-1).tolist(),
        "previous token": previous.amax(dim=-1).tolist(),
    }


def train_member(
    member: Member, seed: int, *, every: int = 10, device: torch.device | str | None = None
) -> dict[str, Any]:
    """Train one member from ``seed`` (weights and batches) and record its curves and its final heads.

    Returns:
        a JSON-ready run: ``steps`` (every ``every`` steps from 0), the curves of :func:`checkpoint_scores` over
        them, ``heads`` (the induction heads at the end, ``[layer, head]``), ``heads_at_start`` (at step 0, the
        control), the final ``prefix matching`` / ``copying`` maxima per layer, ``parameters`` and ``seconds``.
    """
    validate.positive_int("every", every)
    target = check_device(device)
    config = member.config
    sets = eval_sets(config, target if target is not None else "cpu")
    train_config = replace(
        models.TRAINING,
        steps=member.steps,
        batch_size=member.batch_size,
        checkpoint_steps=tuple(range(0, member.steps + 1, every)),
        desc=member.name,
    )
    model, history = models.train_model(
        config,
        seed,
        train_config=train_config,
        evaluate=lambda m: checkpoint_scores(cast("TransformerBridge", m), sets, config.seq_len),
        device=device,
    )
    steps = history.checkpoint_steps

    def final_scores(step: int) -> dict[scores.ScoreName, torch.Tensor]:
        model.load_state_dict(history.checkpoints[step])
        with torch.inference_mode():
            return scores.head_scores(model, sets.prefix_tokens, sets.tokens[:64], sets.copy_tokens)

    start, end = final_scores(steps[0]), final_scores(steps[-1])
    curves = {key: [history.evals[s][key] for s in steps] for key in history.evals[steps[0]]}
    return {
        "steps": steps,
        **curves,
        "heads": scores.induction_heads(end),
        "heads_at_start": scores.induction_heads(start),
        "final prefix matching": end["prefix matching"].amax(dim=-1).tolist(),
        "final copying": end["copying"].amax(dim=-1).tolist(),
        "parameters": parameter_count(config),
        "seconds": history.seconds,
    }


@dataclass(frozen=True)
class Onset:
    """When a run's phase change comes (chapter 5's dating of the loss on repeated tokens).

    Attributes:
        step: the phase-change step (first checkpoint below 1 nat), ``None`` if it never comes.
        window: the fall from 3 to 0.3 nats, ``None`` with no phase change.
        tokens: ``step * B * C``, training tokens seen by the phase-change step (``None`` with none).
    """

    step: int | None
    window: tuple[int, int] | None
    tokens: int | None


def onset(run: Mapping[str, Any], member: Member) -> Onset:
    """The phase change of one run of :func:`train_member` (a shipped one too)."""
    steps, repeated = run["steps"], run["repeated loss"]
    step = dynamics.phase_change_step(steps, repeated)
    if step is None:
        return Onset(None, None, None)
    tokens = onset_tokens(steps, repeated, member.batch_size, member.seq_len)
    return Onset(step, dynamics.phase_change_window(steps, repeated), tokens)


def onset_tokens(
    steps: Sequence[int], repeated_loss: Sequence[float] | torch.Tensor, batch_size: int, seq_len: int
) -> int | None:
    """Training tokens seen by the phase-change step (:func:`lib.induction.dynamics.phase_change_step`):
    ``step * batch_size * seq_len``; ``None`` if the loss on repeated tokens never falls below 1 nat.

    Args:
        steps: ``(K,)`` checkpoint steps. repeated_loss: ``(K,)`` the loss on repeated tokens there.
        batch_size, seq_len: B sequences of C tokens a step.
    """
    validate.positive_int("batch_size", batch_size)
    validate.positive_int("seq_len", seq_len)
    step = dynamics.phase_change_step(steps, repeated_loss)
    return None if step is None else step * batch_size * seq_len


def aoyama_tokens(batch_size: int, seq_len: int) -> float:
    """Aoyama et al.'s predicted onset: ``10^5.7 * sqrt(B * C)`` training tokens."""
    validate.positive_int("batch_size", batch_size)
    validate.positive_int("seq_len", seq_len)
    return AOYAMA_T * math.sqrt(batch_size * seq_len)


def log_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """The least-squares slope of ``log y`` against ``log x`` (the exponent of a power law ``y ~ x^slope``)."""
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"need two matching sequences of at least 2 values, got {len(x)} and {len(y)}")
    if min(x) <= 0 or min(y) <= 0:
        raise ValueError("every value must be positive to take its log")
    lx = torch.tensor(x, dtype=torch.float64).log()
    ly = torch.tensor(y, dtype=torch.float64).log()
    if float(lx.var()) == 0:
        raise ValueError("x must take at least two values: no slope to fit")
    return float(((lx - lx.mean()) * (ly - ly.mean())).sum() / ((lx - lx.mean()) ** 2).sum())


def spread(values: Sequence[float]) -> float:
    """How far apart positive values lie: ``max / min`` (1 = all equal)."""
    if len(values) == 0 or min(values) <= 0:
        raise ValueError(f"need at least one value, all positive, got {list(values)!r}")
    return max(values) / min(values)


@dataclass(frozen=True)
class Family:
    """The shipped runs of ``bench/size_family.py``.

    Attributes:
        members: name (e.g. ``"2L d128"``) -> :class:`Member`.
        runs: name -> the member's runs (:func:`train_member`'s output), in seed order.
        seeds: the seeds of each member's runs.
        every: steps between checkpoints.
    """

    members: dict[str, Member]
    runs: dict[str, list[dict[str, Any]]]
    seeds: dict[str, list[int]]
    every: int


def load_family(path: str | Path = SHIPPED) -> Family:
    """The family that ``bench/size_family.py`` wrote to ``path`` (runs it has not reached are left out)."""
    data = shipped.load_results(
        path, ("members", "runs", "every"), what="model-family runs", made_by="bench/size_family.py"
    )
    members = {name: Member(**fields) for name, fields in data["members"].items()}
    runs: dict[str, list[dict[str, Any]]] = {}
    seeds: dict[str, list[int]] = {}
    for key in sorted(data["runs"], key=lambda k: int(k.rsplit(" ", 1)[1])):
        name, seed = key.rsplit(" seed ", 1)
        if name not in members:
            raise ValueError(f"{path}: run {key!r} of no listed member")
        runs.setdefault(name, []).append(data["runs"][key])
        seeds.setdefault(name, []).append(int(seed))
    return Family({n: m for n, m in members.items() if n in runs}, runs, seeds, int(data["every"]))
