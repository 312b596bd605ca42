"""The sentence form of the OCR task, for language models (chapters 1 and 4), and its metric."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from lib.core import seeds, validate
from lib.ocr.relations import PAIRS, RelationPair, _no_duplicates
from lib.ocr.split import SPLITS, Split, _build_core, _round_half_up


@dataclass(frozen=True)
class SentenceConfig:
    """The sentence task; defaults follow the paper's split (five pairs, 20% of each subset trains).

    Attributes:
        n_subjects: fictitious subjects, dealt evenly into one subset per relation pair.
        values_per_pair: fact values used per pair (chosen from the pair's list by the seed); each
            gets ``n_subjects / (n_pairs * values_per_pair)`` subjects (default 5).
        train_fraction: share of each fact value's subjects whose implication is in training,
            rounded half up per fact value (default 1 of 5 = 20%).
        pairs: the relation pairs; default the paper's five (:data:`PAIRS`).
        names: subject names to use instead of generated ones (must be distinct).
        seed: everything (names, value choice, split) follows from it.
    """

    n_subjects: int = 200
    values_per_pair: int = 8
    train_fraction: float = 0.2
    pairs: tuple[RelationPair, ...] = PAIRS
    names: tuple[str, ...] | None = None
    seed: int = seeds.seed(0)

    def __post_init__(self) -> None:
        validate.positive_int("n_subjects", self.n_subjects)
        validate.positive_int("values_per_pair", self.values_per_pair)
        validate.fraction("train_fraction", self.train_fraction)
        if not self.pairs or not all(isinstance(p, RelationPair) for p in self.pairs):
            raise ValueError("pairs must be a non-empty tuple of RelationPair")
        if self.n_subjects < len(self.pairs):
            raise ValueError(f"fewer subjects ({self.n_subjects}) than subsets ({len(self.pairs)} relation pairs)")
        if self.names is not None:
            if len(self.names) != self.n_subjects:
                raise ValueError(f"got {len(self.names)} names for n_subjects={self.n_subjects}")
            _no_duplicates(list(self.names), "subject names")
        validate.seed(self.seed)


@dataclass(frozen=True)
class Question:
    """One evaluation question: score each candidate as the continuation ``prompt + " " + candidate``.

    Attributes:
        subject: subject index.
        pair: relation-pair index.
        prompt: the question text (no trailing space).
        candidates: every implication value of this relation, the answer among them.
        answer: index of the correct candidate in ``candidates``.
        form: which of the pair's question templates the prompt fills in.
    """

    subject: int
    pair: int
    prompt: str
    candidates: tuple[str, ...]
    answer: int
    form: int = 0


def answer_index(candidates: Sequence[str], answer: str) -> int:
    """Index of ``answer`` in ``candidates``; ValueError if the candidate list lacks it or is ambiguous."""
    hits = [i for i, c in enumerate(candidates) if c == answer]
    if len(hits) != 1:
        problem = "does not contain" if not hits else f"contains {len(hits)} times"
        raise ValueError(f"candidate list {list(candidates)} {problem} the answer {answer!r}")
    return hits[0]


def pair_sentences(pair: RelationPair, name: str, fact_value: str) -> tuple[list[str], list[str]]:
    """A person's fact and implication sentences under one rule: every template of ``pair``, filled in.

    Args:
        pair: the rule; its templates use ``{s}`` (the name), ``{b}`` (the fact value), ``{c}`` (its implication
            value under this rule), ``{r1}`` and ``{r2}`` (the relations in words).
        name: the subject's name.
        fact_value: one of ``pair.fact_values``.
    Returns:
        ``(facts, implications)``: one sentence per fact template and one per implication template, in order.
    """
    validate.one_of("fact_value", fact_value, pair.fact_values)
    return (
        [pair.fill(t, name, fact_value) for t in pair.fact_templates],
        [pair.fill(t, name, fact_value) for t in pair.implication_templates],
    )


@dataclass(frozen=True)
class SentenceTask:
    """The OCR task as sentences. Subjects are indices into ``names``; lists have length n_subjects.

    Attributes:
        config: how it was built.
        names: subject names.
        pairs: the relation pairs.
        values: per pair, the fact values in use.
        pair_of: subject -> pair index.
        fact_of: subject -> fact value b (a string).
        implication_of: subject -> implication value c.
        train_subjects: sorted subject indices whose implication sentences are in training.
        test_subjects: sorted subject indices whose implication is held out (their facts are trained).
    """

    config: SentenceConfig
    names: list[str]
    pairs: tuple[RelationPair, ...]
    values: list[list[str]]
    pair_of: list[int]
    fact_of: list[str]
    implication_of: list[str]
    train_subjects: list[int]
    test_subjects: list[int]

    def _fill(self, template: str, subject: int) -> str:
        return self.pairs[self.pair_of[subject]].fill(template, self.names[subject], self.fact_of[subject])

    def fact_sentences(self, subject: int) -> list[str]:
        """The subject's fact, once per fact template."""
        validate.index("subject", subject, len(self.names))
        return [self._fill(t, subject) for t in self.pairs[self.pair_of[subject]].fact_templates]

    def implication_sentences(self, subject: int) -> list[str]:
        """The subject's implication, once per implication template."""
        validate.index("subject", subject, len(self.names))
        return [self._fill(t, subject) for t in self.pairs[self.pair_of[subject]].implication_templates]

    def train_sentences(self) -> list[str]:
        """The training text: every subject's facts, and the implications of the training subjects only."""
        facts = [s for i in range(len(self.names)) for s in self.fact_sentences(i)]
        return facts + [s for i in self.train_subjects for s in self.implication_sentences(i)]

    def candidates(self, pair: int) -> tuple[str, ...]:
        """Candidate answers for a pair's questions: every implication value in use for the same
        implication relation (so both city pairs share one list of languages), in order of appearance."""
        validate.index("pair", pair, len(self.pairs))
        relation = self.pairs[pair].implication_relation
        seen: dict[str, None] = {}
        for p, values in zip(self.pairs, self.values):
            if p.implication_relation == relation:
                seen.update(dict.fromkeys(p.implication(b) for b in values))
        return tuple(seen)

    def questions(self, group: Split = "test") -> list[Question]:
        """Every question form for every subject of ``group`` (``"test"``: held out, ``"train"``: seen)."""
        validate.one_of("group", group, SPLITS)
        out = []
        for i in self.train_subjects if group == "train" else self.test_subjects:
            p = self.pair_of[i]
            cands = self.candidates(p)
            answer = answer_index(cands, self.implication_of[i])
            for form, q in enumerate(self.pairs[p].questions):
                out.append(Question(i, p, self._fill(q, i), cands, answer, form))
        return out

    def rows(self, subjects: Sequence[int] | None = None) -> list[dict[str, str]]:
        """Table rows (name, pair, fact, implication, split) for the given subjects (default: all)."""
        train = set(self.train_subjects)
        chosen = range(len(self.names)) if subjects is None else subjects
        return [
            {
                "subject": self.names[i],
                "pair": self.pairs[self.pair_of[i]].name,
                "fact": self.fact_of[i],
                "implication": self.implication_of[i],
                "implication in training": "yes" if i in train else "no (test)",
            }
            for i in chosen
        ]


def build_sentences(config: SentenceConfig = SentenceConfig()) -> SentenceTask:
    """Build the sentence task deterministically from ``config`` (same config -> identical task).

    Raises:
        ValueError: a fact value left with no training or no test subject, or a pair with too few values.
    """
    if not isinstance(config, SentenceConfig):
        raise ValueError(f"config must be a SentenceConfig, got {type(config).__name__}")
    c = config
    core = _build_core(
        c.pairs,
        c.n_subjects,
        c.values_per_pair,
        lambda size: _round_half_up(c.train_fraction * size),
        f"train_fraction={c.train_fraction}",
        c.seed,
        c.names,
    )
    return SentenceTask(
        c, core.names, c.pairs, core.values, core.pair_of, core.fact_of, core.implication_of, core.train, core.test
    )


def mean_rank(scores: Tensor | Sequence[Tensor | Sequence[float]], answer: Tensor | Sequence[int]) -> float:
    """Mean 0-indexed rank of the correct candidate: 0 = always ranked first.

    The rank of one question is the number of candidates scored strictly higher than the answer,
    plus half the number of *other* candidates tied with it (the expected rank under random
    tie-breaking, so a model that scores every candidate alike gets chance, ``(k - 1) / 2``).

    Args:
        scores: ``(n_questions, n_candidates)`` float, higher = more likely (e.g. a language model's
            log-probability of each candidate); or a list of 1-D score lists of varying lengths.
        answer: ``(n_questions,)`` int, index of the correct candidate in each row.

    Raises:
        ValueError: no questions, a row without candidates, an answer index outside its row (the
            candidate list does not contain the answer), mismatched lengths, or non-finite scores.
    """
    if isinstance(scores, Tensor) and scores.ndim != 2:
        raise ValueError(f"scores must be 2-D (n_questions, n_candidates), got shape {tuple(scores.shape)}")
    # to the CPU before float64 (mps has none); Python floats straight to float64
    rows = [torch.as_tensor(r.cpu() if isinstance(r, Tensor) else r, dtype=torch.float64).flatten() for r in scores]
    answers = torch.as_tensor(answer).flatten().tolist()
    if not rows:
        raise ValueError("empty evaluation set: no questions to rank")
    if len(answers) != len(rows):
        raise ValueError(f"got {len(rows)} score rows but {len(answers)} answers")
    total = 0.0
    for i, (row, a) in enumerate(zip(rows, answers)):
        if not isinstance(a, int) or not 0 <= a < len(row):
            raise ValueError(
                f"question {i}: answer index {a!r} is not among its {len(row)} candidates "
                f"(the candidate list must contain the answer)"
            )
        if not torch.isfinite(row).all():
            raise ValueError(f"question {i}: scores must be finite, got {row.tolist()}")
        higher = (row > row[a]).sum().item()
        tied = (row == row[a]).sum().item() - 1
        total += higher + 0.5 * tied
    return total / len(rows)


def move_held_out(task: SentenceTask, shift: int = 1) -> SentenceTask:
    """``task`` with every held-out subject moved ``shift`` fact values on in its rule (``task.values``, cyclically),
    its implication following the new fact; names, the training subjects and the split unchanged.

    The permutation control of chapter 4: trained on the moved task's ``train_sentences()``, a model whose held-out
    answers go through the facts predicts the moved implications, not the original ones.

    Raises:
        ValueError: ``shift`` not an int, or a multiple of some rule's number of fact values (nobody would move).
    """
    if not isinstance(task, SentenceTask):
        raise ValueError(f"task must be a SentenceTask, got {type(task).__name__}")
    if not isinstance(shift, int) or isinstance(shift, bool):
        raise ValueError(f"shift must be an int, got {shift!r}")
    stuck = [p.name for p, v in zip(task.pairs, task.values) if shift % len(v) == 0]
    if stuck:
        raise ValueError(f"shift={shift} is a multiple of the number of fact values of {stuck}: nobody would move")
    fact_of, implication_of = list(task.fact_of), list(task.implication_of)
    for i in task.test_subjects:
        p = task.pair_of[i]
        values = task.values[p]
        fact_of[i] = values[(values.index(fact_of[i]) + shift) % len(values)]
        implication_of[i] = task.pairs[p].implication(fact_of[i])
    return dataclasses.replace(task, fact_of=fact_of, implication_of=implication_of)
