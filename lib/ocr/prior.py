"""Prior knowledge (chapter 4): pre-train a language model on a world that follows one rule, then
fine-tune it on new people who follow the true or the counterfactual rule.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

import torch
from torch import Tensor, nn

from lib.core import seeds, shipped, validate
from lib.core.train import TrainConfig, model_device, snapshot, train
from lib.ocr.lm import (
    TinyLMConfig,
    _task_texts,
    encode_sentences,
    fine_tune,
    lm_loss,
    sentence_batches,
    tiny_gpt2,
    word_tokenizer,
)
from lib.ocr.ranking import CandidateScorer, select_forms
from lib.ocr.relations import CITY_LANGUAGE, PAIRS, RelationPair, shifted_map
from lib.ocr.sentences import SentenceConfig, SentenceTask, answer_index, build_sentences, mean_rank
from lib.ocr.split import Split, fictitious_names

if TYPE_CHECKING:  # transformers is imported only when a function needs it (it is slow to import)
    from transformers import PreTrainedTokenizerFast


Init = Literal["pre-trained", "from scratch", "pre-trained on another rule"]
"""Where fine-tuning starts: the model pre-trained on the world, the same initial weights untrained, or (the
crossover control, :attr:`PriorConfig.crossover`) the same weights pre-trained on the same people and templates
under a third rule."""

INITS: tuple[Init, ...] = get_args(Init)[:2]
"""The starts of every run; :data:`CROSSOVER_INIT` is added when the config has a crossover rule."""

CROSSOVER_INIT: Init = get_args(Init)[2]

CROSSOVER_SHIFT = 13
"""The crossover rule's city i gets the true language of city i + 13 (mod 20): like the counterfactual rule (shift 7)
it moves every city, and it gives no city the counterfactual rule's language either (13 - 7 is not a multiple of 20)."""

CROSSOVER = RelationPair(
    "city -> language (crossover)",
    "lives in",
    "speaks",
    shifted_map(CITY_LANGUAGE, CROSSOVER_SHIFT),
    PAIRS[0].fact_templates,
    PAIRS[0].implication_templates,
    PAIRS[0].questions,
    tag=" (x)",
    link="counterfactual",
    link_reason=f"each city gets another city's language (shifted by {CROSSOVER_SHIFT}): false, and not the "
    "counterfactual rule's either",
)
"""A third city -> language rule for the crossover control: the same templates and questions, another false map."""


@dataclass(frozen=True)
class PriorConfig:
    """Known and new people for the prior-knowledge experiment (:func:`build_prior`).

    Every rule uses all of its fact values (all 20 cities for the city pairs), so every rule's
    questions have the same candidates and the same chance level.

    Attributes:
        n_known: people of the pre-training ("world") text, dealt evenly onto the fact values; each
            has every fact sentence and every implication sentence under the first rule.
        n_new: people of the fine-tuning text: the same names, facts and split under every rule.
        train_fraction: share of each fact value's new people whose implication is in the
            fine-tuning text (rounded half up, as in :class:`lib.ocr.sentences.SentenceConfig`).
        rules: relation pairs that differ only in their implication map (same fact values, fact
            sentences, implication values and questions); exactly one of them has ``link == "causal"``
            (:attr:`lib.ocr.relations.RelationPair.link`), and the world follows that one (:attr:`world_rule`),
            wherever it stands in the tuple.
        seed: names, who is known, fact values and split.
        crossover: a third rule for the crossover control (e.g. :data:`CROSSOVER`), or ``None``: the same known
            people, facts and templates follow it in a second pre-training text (:meth:`PriorData.crossover_sentences`);
            it must differ from every rule of ``rules`` only in its implication map, and on every fact value.
    """

    n_known: int = 200
    n_new: int = 100
    train_fraction: float = 0.2
    rules: tuple[RelationPair, ...] = tuple(next(p for p in PAIRS if p.link == k) for k in ("causal", "counterfactual"))
    seed: int = seeds.seed(0)
    crossover: RelationPair | None = None

    def __post_init__(self) -> None:
        if not self.rules or not all(isinstance(r, RelationPair) for r in self.rules):
            raise ValueError("rules must be a non-empty tuple of RelationPair")
        if self.crossover is not None and not isinstance(self.crossover, RelationPair):
            raise ValueError(f"crossover must be a RelationPair or None, got {type(self.crossover).__name__}")
        first = self.rules[0]
        n_values = len(first.fact_values)
        extra = () if self.crossover is None else (self.crossover,)
        for rule in self.rules[1:] + extra:
            same = (
                set(rule.fact_values) == set(first.fact_values)
                and {c for _, c in rule.implication_map} == {c for _, c in first.implication_map}
                and (rule.fact_relation, rule.implication_relation) == (first.fact_relation, first.implication_relation)
                and (rule.fact_templates, rule.implication_templates, rule.questions)
                == (first.fact_templates, first.implication_templates, first.questions)
            )
            if not same:
                raise ValueError(
                    f"rules must differ only in their implication map: {rule.name!r} and {first.name!r} differ "
                    f"in fact values, implication values, relations, templates or questions"
                )
        if len({r.name for r in self.rules}) != len(self.rules):
            raise ValueError(f"rule names must be distinct, got {[r.name for r in self.rules]}")
        links = [r.link for r in self.rules]
        if links.count("causal") != 1:
            raise ValueError(
                f"rules must hold exactly one rule with link 'causal' (the rule the world follows), got links {links}"
            )
        if self.crossover is not None:
            if self.crossover.name in {r.name for r in self.rules}:
                raise ValueError(f"crossover must not be one of rules, got {self.crossover.name!r}")
            shared = [
                b
                for b in first.fact_values
                if any(self.crossover.implication(b) == r.implication(b) for r in self.rules)
            ]
            if shared:
                raise ValueError(
                    f"crossover {self.crossover.name!r} must give every fact value another implication than every rule "
                    f"does; it agrees with one on {shared}"
                )
        validate.int_at_least("n_known", self.n_known, 2 * n_values, f"two known people per fact value, {n_values}")
        validate.positive_int("n_new", self.n_new)
        validate.fraction("train_fraction", self.train_fraction)
        validate.seed(self.seed)

    @property
    def world_rule(self) -> RelationPair:
        """The rule the known people follow: the one rule of :attr:`rules` whose ``link`` is ``"causal"``."""
        return next(r for r in self.rules if r.link == "causal")


@dataclass(frozen=True)
class PriorData:
    """The texts and the tokenizer of one seed of the prior-knowledge experiment.

    Attributes:
        config: how it was built.
        world: the known people under ``config.world_rule``; all of their sentences are pre-training text.
        new: the new people under each rule, in the order of ``config.rules`` (same names, facts and split).
        tokenizer: a :func:`word_tokenizer` over every text of ``world`` and ``new``.
        crossover_world: the known people under ``config.crossover`` (same names and facts as ``world``), or ``None``.
    """

    config: PriorConfig
    world: SentenceTask
    new: tuple[SentenceTask, ...]
    tokenizer: PreTrainedTokenizerFast
    crossover_world: SentenceTask | None = None

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.config.rules)

    def world_sentences(self) -> list[str]:
        """The pre-training text: every known person's fact and implication sentences."""
        return _every_sentence(self.world)

    def crossover_sentences(self) -> list[str]:
        """The crossover control's pre-training text: the same people and facts, implications under the third rule."""
        if self.crossover_world is None:
            raise ValueError("this PriorData has no crossover rule (PriorConfig.crossover is None)")
        return _every_sentence(self.crossover_world)


def _every_sentence(task: SentenceTask) -> list[str]:
    return [s for i in range(len(task.names)) for s in task.fact_sentences(i) + task.implication_sentences(i)]


def build_prior(config: PriorConfig = PriorConfig()) -> PriorData:
    """The known people, the new people under each rule and their tokenizer, deterministically from ``config``.

    Names come from :func:`lib.ocr.split.fictitious_names`: the first ``n_known`` are the known people, the
    others the new ones, so no new person appears in the pre-training text.
    """
    if not isinstance(config, PriorConfig):
        raise ValueError(f"config must be a PriorConfig, got {type(config).__name__}")
    c = config
    names = fictitious_names(c.n_known + c.n_new, c.seed)
    n_values = len(c.world_rule.fact_values)

    def known(rule: RelationPair) -> SentenceTask:
        return build_sentences(SentenceConfig(c.n_known, n_values, 0.5, (rule,), tuple(names[: c.n_known]), c.seed))

    world = known(c.world_rule)
    new = tuple(
        build_sentences(SentenceConfig(c.n_new, n_values, c.train_fraction, (rule,), tuple(names[c.n_known :]), c.seed))
        for rule in c.rules
    )
    crossover = None if c.crossover is None else known(c.crossover)
    extra = [] if crossover is None else _every_sentence(crossover)  # no new words: the same token ids
    tokenizer = word_tokenizer(_every_sentence(world) + [t for task in new for t in _task_texts(task)] + extra)
    return PriorData(c, world, new, tokenizer, crossover)


def rule_ranks(
    model: nn.Module,
    data: PriorData,
    group: Split = "test",
    form: int = 0,
    batch_size: int = 512,
) -> list[float]:
    """Mean rank of each rule's answer for the new people of ``group``, from one scoring pass.

    The questions are those of ``data.new[0]`` in question form ``form``; entry ``r`` ranks the
    implication the person has under ``data.config.rules[r]`` among the same candidates.

    Returns:
        one mean rank per rule, in the order of ``data.config.rules``.
    """
    return _RuleRanker(data, group, form, batch_size)(model)


class _RuleRanker:
    """:func:`rule_ranks` with the questions tokenized once, for evaluations during training."""

    def __init__(self, data: PriorData, group: Split, form: int, batch_size: int) -> None:
        base = data.new[0]
        questions = select_forms(base, base.questions(group), [form])
        self.scorer = CandidateScorer(data.tokenizer, questions, batch_size)
        self.answers = [
            [answer_index(q.candidates, task.implication_of[q.subject]) for q in questions] for task in data.new
        ]

    def __call__(self, model: nn.Module) -> list[float]:
        scores = self.scorer(model)
        return [mean_rank(scores, answers) for answers in self.answers]

    def measures(self, model: nn.Module, world: int) -> Tensor:
        """``(3, R)``: per rule ``r``, its answer's mean rank, the share of questions on which it is ranked first
        (ties shared), and the share on which it scores above rule ``world``'s answer (ties count half)."""
        scores = self.scorer(model)
        out = torch.empty(3, len(self.answers))
        for r, answers in enumerate(self.answers):
            own = torch.stack([row[a] for row, a in zip(scores, answers)])
            rivals = torch.stack([row[a] for row, a in zip(scores, self.answers[world])])
            first = [(row > row[a]).sum() == 0 for row, a in zip(scores, answers)]
            ties = torch.tensor([float((row == row[a]).sum()) for row, a in zip(scores, answers)])
            out[0, r] = mean_rank(scores, answers)
            out[1, r] = (torch.tensor(first, dtype=torch.float) / ties).mean()
            out[2, r] = ((own > rivals).float() + 0.5 * (own == rivals).float()).mean()
        return out


def world_rank(model: nn.Module, data: PriorData, form: int = 0, batch_size: int = 512) -> float:
    """Mean rank of the known people's own implications (all of them were pre-training text)."""
    return _WorldRanker(data, form, batch_size)(model)


def fine_tuning_text(data: PriorData, task: SentenceTask, replay: bool = False, seed: int = seeds.seed(0)) -> list[str]:
    """``task``'s training sentences; with ``replay``, followed by as many of ``data``'s pre-training sentences, drawn
    without replacement by ``seed`` (all of them if there are fewer)."""
    text = task.train_sentences()
    if not replay:
        return text
    world = data.world_sentences()
    pick = torch.randperm(len(world), generator=torch.Generator().manual_seed(seed))[: len(text)]
    return text + [world[k] for k in pick.tolist()]


class _WorldRanker:
    """:func:`world_rank` with the questions tokenized once, for the many models of one experiment."""

    def __init__(self, data: PriorData, form: int, batch_size: int, world: SentenceTask | None = None) -> None:
        w = data.world if world is None else world
        questions = select_forms(w, w.questions("train") + w.questions("test"), [form])
        self.scorer = CandidateScorer(data.tokenizer, questions, batch_size)
        self.answers = [q.answer for q in questions]

    def __call__(self, model: nn.Module) -> float:
        return mean_rank(self.scorer(model), self.answers)


@dataclass(frozen=True)
class PriorExperiment:
    """Every setting of the prior-knowledge experiment; :func:`run_prior_knowledge` gives all of them one seed.

    Attributes:
        data: the known and new people and the rules.
        model: the tiny model (all arms of a seed start from the same initial weights).
        pretrain: training on :meth:`PriorData.world_sentences`.
        fine_tune: training on each rule's :meth:`lib.ocr.sentences.SentenceTask.train_sentences`; held-out ranks
            are measured at its ``checkpoint_steps`` and after the last step.
        form: the question form asked (index into the rules' ``questions``; 0: ``"{s} speaks"``).
        replay: mix into every fine-tuning text as many pre-training sentences (drawn without replacement,
            seeded) as it has of its own; ``False`` (default): the new people's sentences only.
    """

    data: PriorConfig = PriorConfig()
    model: TinyLMConfig = TinyLMConfig(n_layer=1)
    pretrain: TrainConfig = TrainConfig(steps=400, lr=5e-3, batch_size=32, weight_decay=0.1, desc="pre-training")
    fine_tune: TrainConfig = TrainConfig(
        steps=250,
        lr=5e-3,
        batch_size=32,
        weight_decay=0.1,
        checkpoint_steps=(0, 50, 100, 150, 200),
        desc="fine-tuning",
    )
    form: int = 0
    replay: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.replay, bool):
            raise ValueError(f"replay must be True or False, got {self.replay!r}")
        for name, kind in (("data", PriorConfig), ("model", TinyLMConfig), ("pretrain", TrainConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if not isinstance(self.fine_tune, TrainConfig):
            raise ValueError(f"fine_tune must be a TrainConfig, got {type(self.fine_tune).__name__}")
        validate.index("form", self.form, min(len(r.questions) for r in self.data.rules))

    @property
    def eval_steps(self) -> tuple[int, ...]:
        """Fine-tuning steps at which held-out ranks are measured: the checkpoints and the last step."""
        return tuple(sorted(set(self.fine_tune.checkpoint_steps) | {self.fine_tune.steps}))


@dataclass(frozen=True)
class PriorRun:
    """One seed of the prior-knowledge experiment.

    Attributes:
        steps: fine-tuning steps at which held-out ranks were measured (0: before fine-tuning).
        rules: rule names, in the order of the config's rules.
        held_out: ``(init, fine-tuned rule)`` -> ``(len(steps), len(rules))`` float: entry ``[t, r]``
            is the held-out new people's mean rank of their implication under rule ``r`` at step ``steps[t]``.
        train_after: ``(init, fine-tuned rule)`` -> mean rank of the fine-tuned rule's implication of the
            new people whose implication was in the fine-tuning text, after fine-tuning.
        top1: ``(init, fine-tuned rule)`` -> ``(len(steps), len(rules))``: share of held-out questions on which rule
            ``r``'s implication is ranked first (ties shared).
        above_world: the same keys and shape: share of held-out questions on which rule ``r``'s implication scores
            above the world rule's (ties count half; 0.5 in the world rule's own column).
        world_after_fine_tuning: ``(init, fine-tuned rule)`` -> mean rank of the known people's implications after
            that fine-tuning run (retention of the pre-trained world; for :data:`CROSSOVER_INIT`, of the crossover
            world, the implications it was pre-trained on).
        world_after_pretraining: mean rank of the known people's implications after pre-training.
        world_before_pretraining: the same at initialisation.
        crossover_after_pretraining: the known people's mean rank of their crossover-rule implications after the
            crossover pre-training, or ``None`` without a crossover rule.
        seconds: wall time of the whole run.
    """

    steps: tuple[int, ...]
    rules: tuple[str, ...]
    held_out: dict[tuple[Init, str], Tensor]
    train_after: dict[tuple[Init, str], float]
    world_after_pretraining: float
    world_before_pretraining: float
    top1: dict[tuple[Init, str], Tensor] = field(default_factory=dict)
    above_world: dict[tuple[Init, str], Tensor] = field(default_factory=dict)
    world_after_fine_tuning: dict[tuple[Init, str], float] = field(default_factory=dict)
    crossover_after_pretraining: float | None = None
    seconds: float = field(default=0.0, compare=False)

    @property
    def inits(self) -> tuple[Init, ...]:
        """The starts this run fine-tuned from: :data:`INITS`, then :data:`CROSSOVER_INIT` with a crossover rule."""
        return INITS + ((CROSSOVER_INIT,) if self.crossover_after_pretraining is not None else ())

    def rank(self, init: Init, trained: str, answer: str | None = None) -> Tensor:
        """``(len(steps),)``: held-out mean rank of rule ``answer``'s implication (default: the fine-tuned
        rule's) along fine-tuning on rule ``trained``, from initialisation ``init``."""
        validate.one_of("init", init, self.inits)
        validate.one_of("trained", trained, self.rules)
        answer = trained if answer is None else validate.one_of("answer", answer, self.rules)
        return self.held_out[init, trained][:, self.rules.index(answer)]


def run_prior_knowledge(
    experiment: PriorExperiment = PriorExperiment(), seed: int = seeds.seed(0), device: torch.device | str | None = None
) -> PriorRun:
    """Pre-train once, then fine-tune on every rule from the pre-trained and from the untrained weights.

    ``seed`` replaces the seeds of ``experiment.data`` (people, split), ``model`` (initial weights),
    ``pretrain`` and ``fine_tune`` (batches). The untrained ("from scratch") arms start from exactly
    the initial weights that pre-training started from; every arm fine-tunes a copy. With a crossover rule
    (:attr:`PriorConfig.crossover`) the same initial weights are also pre-trained, with the same settings, on the
    crossover world, and fine-tuned on every rule from there (:data:`CROSSOVER_INIT`).
    """
    if not isinstance(experiment, PriorExperiment):
        raise ValueError(f"experiment must be a PriorExperiment, got {type(experiment).__name__}")
    validate.seed(seed)
    start = time.perf_counter()
    e = experiment
    data = build_prior(dataclasses.replace(e.data, seed=seed))
    model = tiny_gpt2(data.tokenizer, dataclasses.replace(e.model, seed=seed), device)
    initial = snapshot(model)
    world_ranks = _WorldRanker(data, e.form, 512)
    world_before = world_ranks(model)
    fine_tune(model, data.tokenizer, data.world_sentences(), dataclasses.replace(e.pretrain, seed=seed))
    states: dict[Init, dict[str, Tensor]] = {"pre-trained": snapshot(model), "from scratch": initial}
    world_after = world_ranks(model)
    retention: dict[Init, _WorldRanker] = dict.fromkeys(INITS, world_ranks)
    crossover_after = None
    if data.crossover_world is not None:
        other = copy.deepcopy(model)
        other.load_state_dict(initial)
        fine_tune(other, data.tokenizer, data.crossover_sentences(), dataclasses.replace(e.pretrain, seed=seed))
        states[CROSSOVER_INIT] = snapshot(other)
        retention[CROSSOVER_INIT] = _WorldRanker(data, e.form, 512, data.crossover_world)
        crossover_after = retention[CROSSOVER_INIT](other)
    config = dataclasses.replace(e.fine_tune, seed=seed, checkpoint_steps=e.eval_steps)
    held_out_ranks, train_ranks = _RuleRanker(data, "test", e.form, 512), _RuleRanker(data, "train", e.form, 512)
    world_index = e.data.rules.index(e.data.world_rule)
    held_out: dict[tuple[Init, str], Tensor] = {}
    top1: dict[tuple[Init, str], Tensor] = {}
    above: dict[tuple[Init, str], Tensor] = {}
    world_after_ft: dict[tuple[Init, str], float] = {}
    train_after: dict[tuple[Init, str], float] = {}
    for init in states:
        for r, task in enumerate(data.new):
            arm = copy.deepcopy(model)
            arm.load_state_dict(states[init])
            text = fine_tuning_text(data, task, e.replay, seed)
            ids, mask = encode_sentences(data.tokenizer, text, model_device(arm))
            history = train(
                arm,
                sentence_batches(ids, mask),
                lm_loss,
                config,
                evaluate=lambda m: held_out_ranks.measures(m, world_index),
            )
            name = data.rule_names[r]
            measured = torch.stack([history.evals[s] for s in e.eval_steps])  # (steps, 3, rules)
            held_out[init, name], top1[init, name], above[init, name] = measured.unbind(1)
            train_after[init, name] = train_ranks(arm)[r]
            world_after_ft[init, name] = retention[init](arm)
    return PriorRun(
        e.eval_steps,
        data.rule_names,
        held_out,
        train_after,
        world_after,
        world_before,
        top1,
        above,
        world_after_ft,
        crossover_after,
        time.perf_counter() - start,
    )


def t_quantile(p: float, df: int) -> float:
    """The ``p``-quantile of Student's t distribution with ``df`` degrees of freedom, for ``0.5 <= p < 1``.

    With ``t = sqrt(df) tan(u)``, the angle ``u`` has density proportional to ``cos(u) ** (df - 1)`` on
    ``(-pi/2, pi/2)``: a bounded integrand, integrated numerically in float64 (trapezoids on 200,001 points) and
    inverted by interpolation. Agrees with the printed tables to their 3 decimals (``df = 1`` is exact: Cauchy).
    """
    validate.positive_int("df", df)
    if not 0.5 <= p < 1:
        raise ValueError(f"p must be in [0.5, 1), got {p!r}")
    u = torch.linspace(0, torch.pi / 2, 200_001, dtype=torch.float64)
    density = u.cos() ** (df - 1)
    mass = torch.cat([torch.zeros(1, dtype=torch.float64), ((density[1:] + density[:-1]) / 2 * u.diff()).cumsum(0)])
    cdf = 0.5 + 0.5 * mass / mass[-1]  # (points,): P(T <= sqrt(df) tan(u))
    k = int(torch.searchsorted(cdf, torch.tensor([p], dtype=torch.float64)).clamp(1, len(u) - 1))
    angle = u[k - 1] + (p - cdf[k - 1]) / (cdf[k] - cdf[k - 1]) * (u[k] - u[k - 1])
    return float(df**0.5 * angle.tan())


def seed_interval(values: Tensor | list[float], level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``values`` (one per seed, ``(seeds,)``, at least two) and its two-sided Student-t interval at
    ``level``: ``(mean, low, high)``. For paired differences, pass the per-seed differences.

    ``bench/prior_knowledge.py`` writes its 95% intervals with it; chapter 4 also reads them at a Bonferroni-corrected
    ``level`` (``1 - 0.05 / m`` for ``m`` intervals).
    """
    v = torch.as_tensor(values).detach().cpu().double()  # float64 on the CPU: MPS has none
    if v.ndim != 1 or len(v) < 2:
        raise ValueError(f"values must be one number per seed, at least two, got shape {tuple(v.shape)}")
    validate.fraction("level", level)
    mean = float(v.mean())
    half = t_quantile((1 + level) / 2, len(v) - 1) * float(v.std()) / len(v) ** 0.5
    return mean, mean - half, mean + half


BENCH_PATH = shipped.DATA / "prior_knowledge.json"
"""The ten-seed run of ``bench/prior_knowledge.py --json`` that chapter 4 plots."""


def load_bench(path: Path | str = BENCH_PATH) -> dict:
    """The JSON written by ``bench/prior_knowledge.py --json``: settings, per-arm curves of ``[mean, low, high]``
    (95% intervals over seeds) at every step, every seed's curves (``"per seed"``: ``"seeds"``, ``"steps"`` and per
    arm and measure a ``(seeds, steps)`` list), and the paired final differences (pre-trained minus from scratch)."""
    required = ("settings", "curves", "per seed", "paired differences (pre-trained - from scratch), final")
    made_by = "bench/prior_knowledge.py --json"
    return shipped.load_results(path, required, what="prior-knowledge bench results", made_by=made_by)
