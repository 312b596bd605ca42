"""The symbolic form of the OCR task: one token per subject, relation and value (chapters 1-3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, get_args

import torch
from torch import Tensor

from lib.core import seeds, validate
from lib.ocr.relations import PAIRS, _no_duplicates, minimal_pair
from lib.ocr.split import GROUPS, TRAIN_GROUPS, Group, _build_core

RelationPosition = Literal["fixed", "random"]
"""Where the relation token sits in a symbolic sequence: ``"fixed"`` (the book's default: right before EOS) or
``"random"`` (the official data generator's: at a random position after the subject)."""

RELATION_POSITIONS: tuple[RelationPosition, ...] = get_args(RelationPosition)

TokenKind = Literal["subject", "relation", "fact value", "implication value", "noise", "EOS"]
"""The blocks of the symbolic vocabulary, in vocabulary order."""

TOKEN_KINDS: tuple[TokenKind, ...] = get_args(TokenKind)


@dataclass(frozen=True)
class SymbolicConfig:
    """The symbolic task; defaults are the paper's minimal experiment.

    Attributes:
        n_subjects: fictitious subjects, one token each.
        n_facts: fact values b_1..b_n, each with its own implication value c_i (one-to-one). With
            ``five_pairs`` they are shared out evenly: ``n_facts / 5`` values per relation pair.
        train_per_fact: subjects per fact value whose implication is seen in training (paper: 1,
            so with 4 subjects per value 25% of subjects train).
        seq_len: tokens per input sequence, EOS last; the prediction is read at EOS.
        n_noise: distinct noise tokens filling the positions not used by subject, relation and EOS.
        five_pairs: False: one r1/r2 relation pair (the minimal experiment); True: the five pairs of
            :data:`PAIRS`, each on its own subset of subjects with its own r1/r2 tokens.
        relation_position: ``"fixed"`` (default, the book's layout): the relation token at
            ``seq_len - 2``, right before EOS, the subject at a uniformly random position in
            ``[0, seq_len - 2)``. ``"random"`` (the official data generator's layout): the subject at a
            uniformly random position ``p`` in ``[0, seq_len - 2)``, the relation at a uniformly random
            position in ``[p + 1, seq_len - 1)``, noise everywhere else. EOS is last in both.
        seed: everything (names, split, value choice) follows from it.
    """

    n_subjects: int = 80
    n_facts: int = 20
    train_per_fact: int = 1
    seq_len: int = 16
    n_noise: int = 5
    five_pairs: bool = False
    relation_position: RelationPosition = "fixed"
    seed: int = seeds.seed(0)

    def __post_init__(self) -> None:
        for name in ("n_subjects", "n_facts", "train_per_fact", "seq_len"):
            validate.positive_int(name, getattr(self, name))
        validate.non_negative_int("n_noise", self.n_noise)
        validate.one_of("relation_position", self.relation_position, RELATION_POSITIONS)
        validate.seed(self.seed)
        if self.seq_len < 3:
            raise ValueError(
                f"seq_len={self.seq_len} is too short for the layout: "
                "it needs a subject, a relation and EOS (at least 3)"
            )
        if self.seq_len > 3 and self.n_noise < 1:
            raise ValueError(
                f"n_noise must be >= 1 when seq_len > 3 "
                f"(seq_len={self.seq_len} leaves {self.seq_len - 3} noise positions)"
            )
        if self.five_pairs and self.n_facts % len(PAIRS):
            raise ValueError(
                f"with five_pairs, n_facts must be a multiple of {len(PAIRS)} (values per pair), got {self.n_facts}"
            )

    @property
    def n_pairs(self) -> int:
        return len(PAIRS) if self.five_pairs else 1

    @property
    def layout(self) -> str:
        """The token layout of one sequence, in words: one line per part, each short enough for a page."""
        if self.relation_position == "random":
            return (
                f"positions 0..{self.seq_len - 2}: noise tokens, the subject at a random position among\n"
                f"  0..{self.seq_len - 3} and the relation at a random position after it;\n"
                f"position {self.seq_len - 1}: EOS, where the answer is predicted"
            )
        return (
            f"positions 0..{self.seq_len - 3}: noise tokens, the subject at a random position among them;\n"
            f"position {self.seq_len - 2}: the relation token;\n"
            f"position {self.seq_len - 1}: EOS, where the answer is predicted"
        )


@dataclass(frozen=True, eq=False)
class SymbolicTask:
    """The symbolic OCR task: vocabulary, who-has-what tensors, and sequence samplers.

    Token ids are laid out in blocks: subjects, relation tokens (r1 then r2 of each pair), fact
    values, implication values, noise tokens, EOS. ``implication_value_ids[i]`` is the implication
    of ``fact_value_ids[i]``. Every tensor attribute is int64 on the CPU.

    A sequence ``x`` (seq_len,) is: noise tokens, the subject at a random position in
    ``[0, seq_len - 2)``, the relation at ``seq_len - 2`` (``config.relation_position == "fixed"``)
    or at a random position after the subject (``"random"``), EOS at ``seq_len - 1``; its answer
    ``y`` is the value that relation gives the subject. Compared by identity (it holds tensors).
    """

    config: SymbolicConfig
    tokens: list[str]
    vocab_size: int
    subject_ids: Tensor
    fact_of: Tensor
    implication_of: Tensor
    fact_relation_of: Tensor
    implication_relation_of: Tensor
    pair_of: Tensor
    pair_names: list[str]
    train_subjects: Tensor
    test_subjects: Tensor
    fact_value_ids: Tensor
    implication_value_ids: Tensor
    noise_ids: Tensor
    eos_id: int
    _device_cache: dict[str, dict[str, Tensor]] = field(default_factory=dict, repr=False, compare=False)

    GROUPS: ClassVar[tuple[Group, ...]] = GROUPS  # the module's GROUPS, also reachable from a task

    # --- descriptions -------------------------------------------------------------------------
    def decode(self, ids: Tensor | Sequence[int]) -> list[str]:
        """Token names of a 1-D sequence of ids."""
        ids = ids.tolist() if isinstance(ids, Tensor) else list(ids)
        bad = [i for i in ids if not 0 <= int(i) < self.vocab_size]
        if bad:
            raise ValueError(f"token ids {bad[:5]} outside [0, {self.vocab_size})")
        return [self.tokens[int(i)] for i in ids]

    def kind_of(self, token_id: int) -> TokenKind:
        """The block of :data:`TOKEN_KINDS` that ``token_id`` belongs to."""
        blocks = self.token_blocks()
        for kind, (lo, hi) in blocks.items():
            if lo <= token_id < hi:
                return kind
        raise ValueError(f"token id {token_id} outside [0, {self.vocab_size})")

    def token_blocks(self) -> dict[TokenKind, tuple[int, int]]:
        """Kind -> half-open range ``(first id, last id + 1)`` of its tokens, in vocabulary order."""
        n_s, n_r, n_v = len(self.subject_ids), 2 * len(self.pair_names), len(self.fact_value_ids)
        edges = [
            0,
            n_s,
            n_s + n_r,
            n_s + n_r + n_v,
            n_s + n_r + 2 * n_v,
            n_s + n_r + 2 * n_v + len(self.noise_ids),
            self.vocab_size,
        ]
        return {k: (edges[i], edges[i + 1]) for i, k in enumerate(TOKEN_KINDS)}

    @property
    def relation_ids(self) -> Tensor:
        """(2 * n_pairs,) int64: r1 and r2 token of each pair, in that order."""
        lo, hi = self.token_blocks()["relation"]
        return torch.arange(lo, hi)

    def subjects_of(self, group: Group) -> Tensor:
        """(n,) int64 subject indices a group draws from."""
        validate.one_of("group", group, GROUPS)
        return self.train_subjects if group.startswith("train") else self.test_subjects

    def _on(self, device: torch.device) -> dict[str, Tensor]:
        key = str(device)
        if key not in self._device_cache:
            names = (
                "subject_ids",
                "fact_of",
                "implication_of",
                "fact_relation_of",
                "implication_relation_of",
                "train_subjects",
                "test_subjects",
                "noise_ids",
            )
            self._device_cache[key] = {n: getattr(self, n).to(device) for n in names}
        return self._device_cache[key]

    # --- sequences ----------------------------------------------------------------------------
    def _sequences(self, group: Group, subjects: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        t = self._on(subjects.device)
        n, seq_len = len(subjects), self.config.seq_len
        if len(t["noise_ids"]):
            noise = torch.randint(0, len(t["noise_ids"]), (n, seq_len), generator=generator, device=subjects.device)
            x = t["noise_ids"][noise]
        else:
            x = torch.empty((n, seq_len), dtype=torch.long, device=subjects.device)
        rows = torch.arange(n, device=subjects.device)
        where = torch.randint(0, seq_len - 2, (n,), generator=generator, device=subjects.device)
        x[rows, where] = t["subject_ids"][subjects]
        fact = group.endswith("facts")
        relation = (t["fact_relation_of"] if fact else t["implication_relation_of"])[subjects]
        if self.config.relation_position == "fixed":
            x[:, -2] = relation
        else:
            # uniform over the seq_len - 2 - where positions strictly between the subject and EOS
            after = torch.rand(n, generator=generator, device=subjects.device) * (seq_len - 2 - where)
            x[rows, where + 1 + after.long().clamp(max=seq_len - 3 - where)] = relation
        x[:, -1] = self.eos_id
        y = (t["fact_of"] if fact else t["implication_of"])[subjects]
        return x, y

    def sample(self, group: Group, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``n`` random examples of one group, fresh noise layout each call, made on ``generator.device``.

        Returns:
            ``x`` (n, seq_len) int64 with EOS last, ``y`` (n,) int64 answer token id.
        """
        validate.one_of("group", group, GROUPS)
        validate.positive_int("n", n)
        if not isinstance(generator, torch.Generator):
            raise ValueError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        pool = self._on(generator.device)["train_subjects" if group.startswith("train") else "test_subjects"]
        pick = torch.randint(0, len(pool), (n,), generator=generator, device=generator.device)
        return self._sequences(group, pool[pick], generator)

    def train_batch(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """The paper's training mix: equal thirds train_facts / train_implications / test_facts.

        Fits ``lib.core.train.train``'s ``make_batch``. For a batch size not divisible by 3 the later
        groups get the extra examples. Returns ``x`` (batch_size, seq_len), ``y`` (batch_size,).
        """
        validate.int_at_least("batch_size", batch_size, 3, "one example per training group")
        parts = [self.sample(g, (batch_size + i) // 3, generator) for i, g in enumerate(TRAIN_GROUPS)]
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

    def fixed(
        self, group: Group, per_subject: int = 1, seed: int = seeds.seed(0), device: torch.device | str | None = None
    ) -> tuple[Tensor, Tensor]:
        """Deterministic evaluation set: every subject of the group ``per_subject`` times.

        Rows ``[k * per_subject, (k + 1) * per_subject)`` belong to ``subjects_of(group)[k]``. The
        noise layout depends only on ``seed`` (drawn on the CPU), not on the device.

        Returns:
            ``x`` (n_group * per_subject, seq_len) int64, ``y`` (n_group * per_subject,) int64, on ``device``.
        """
        validate.one_of("group", group, GROUPS)
        validate.positive_int("per_subject", per_subject)
        generator = torch.Generator().manual_seed(validate.seed(seed))
        x, y = self._sequences(group, self.subjects_of(group).repeat_interleave(per_subject), generator)
        return (x, y) if device is None else (x.to(device), y.to(device))


def symbolic_sequences(
    task: SymbolicTask, group: Group, subjects: Tensor, noise: Tensor, where: Tensor
) -> tuple[Tensor, Tensor]:
    """Lay out the book's (fixed-layout) sequences from draws already made: the token layout, written out.

    ``SymbolicTask.sample`` and ``SymbolicTask.fixed`` draw ``noise`` and ``where`` and then place the tokens exactly
    like this (for ``relation_position="fixed"``); a unit test checks that both give the same sequences.

    Args:
        task: the symbolic task.
        group: one of :data:`GROUPS`: a ``*_facts`` group asks each subject's fact relation (answer: its fact
            value), a ``*_implications`` group its implication relation (answer: its implication value).
        subjects: ``(n,)`` int64 subject indices.
        noise: ``(n, seq_len)`` int64 background token ids (noise tokens); left unchanged.
        where: ``(n,)`` int64 position of the subject, in ``[0, seq_len - 2)``.
    Returns:
        ``x`` ``(n, seq_len)``: ``noise`` with the subject at ``where``, the relation at ``seq_len - 2`` and EOS
        at ``seq_len - 1``; ``y`` ``(n,)``: the answer token ids.
    """
    validate.one_of("group", group, GROUPS)
    seq_len = task.config.seq_len
    n = subjects.shape[0] if subjects.ndim == 1 else -1
    if n < 0 or noise.shape != (n, seq_len) or where.shape != (n,):
        raise ValueError(
            f"need subjects (n,), noise (n, seq_len={seq_len}) and where (n,); got shapes "
            f"{tuple(subjects.shape)}, {tuple(noise.shape)}, {tuple(where.shape)}"
        )
    if n and (where.min() < 0 or where.max() >= seq_len - 2):
        raise ValueError(f"where must lie in [0, seq_len - 2 = {seq_len - 2}), got {where.min()}..{where.max()}")
    fact = group.endswith("facts")
    t = task._on(subjects.device)  # the task's tables where the subjects are
    x = noise.clone()
    x[torch.arange(n), where] = t["subject_ids"][subjects]
    x[:, -2] = (t["fact_relation_of"] if fact else t["implication_relation_of"])[subjects]
    x[:, -1] = task.eos_id
    return x, (t["fact_of"] if fact else t["implication_of"])[subjects]


def build_symbolic(config: SymbolicConfig = SymbolicConfig()) -> SymbolicTask:
    """Build the symbolic task deterministically from ``config`` (same config -> identical task).

    Raises:
        ValueError: fewer subjects than subsets, or a fact value left with no training or no test
            subject (needs at least ``train_per_fact + 1`` subjects per fact value), or too few
            values in a relation pair.
    """
    if not isinstance(config, SymbolicConfig):
        raise ValueError(f"config must be a SymbolicConfig, got {type(config).__name__}")
    c = config
    pairs = PAIRS if c.five_pairs else (minimal_pair(c.n_facts),)
    per_pair = c.n_facts // len(pairs)
    if c.n_subjects < len(pairs):
        raise ValueError(f"fewer subjects ({c.n_subjects}) than subsets ({len(pairs)} relation pairs)")
    core = _build_core(
        pairs, c.n_subjects, per_pair, lambda size: c.train_per_fact, f"train_per_fact={c.train_per_fact}", c.seed
    )

    tokens: list[str] = list(core.names)
    relation_id: dict[tuple[int, int], int] = {}
    for p, pair in enumerate(pairs):
        for r, word in ((1, pair.fact_relation), (2, pair.implication_relation)):
            relation_id[p, r] = len(tokens)
            tokens.append(word + pair.tag)
    fact_id: dict[tuple[int, str], int] = {}
    implication_id: dict[tuple[int, str], int] = {}
    for p, pair in enumerate(pairs):
        for b in core.values[p]:
            fact_id[p, b] = len(tokens)
            tokens.append(b + pair.tag)
    for p, pair in enumerate(pairs):
        for b in core.values[p]:
            implication_id[p, b] = len(tokens)
            tokens.append(pair.implication(b) + pair.tag)
    noise = list(range(len(tokens), len(tokens) + c.n_noise))
    tokens += [f"noise{i}" for i in range(c.n_noise)]
    eos = len(tokens)
    tokens.append("<EOS>")
    _no_duplicates(tokens, "token names (subject names must not equal relation or value names)")

    long = lambda v: torch.tensor(v, dtype=torch.long)  # noqa: E731
    n = c.n_subjects
    return SymbolicTask(
        config=c,
        tokens=tokens,
        vocab_size=len(tokens),
        subject_ids=torch.arange(n),
        fact_of=long([fact_id[core.pair_of[i], core.fact_of[i]] for i in range(n)]),
        implication_of=long([implication_id[core.pair_of[i], core.fact_of[i]] for i in range(n)]),
        fact_relation_of=long([relation_id[core.pair_of[i], 1] for i in range(n)]),
        implication_relation_of=long([relation_id[core.pair_of[i], 2] for i in range(n)]),
        pair_of=long(core.pair_of),
        pair_names=[p.name for p in pairs],
        train_subjects=long(core.train),
        test_subjects=long(core.test),
        fact_value_ids=long(list(fact_id.values())),
        implication_value_ids=long(list(implication_id.values())),
        noise_ids=long(noise),
        eos_id=eos,
    )
