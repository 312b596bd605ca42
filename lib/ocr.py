"""The out-of-context reasoning (OCR) task of Huang et al. (2025, arXiv 2506.10887).

An implication rule ``(s, r1, b_i) => (s, r2, c_i)`` for every subject ``s``: "people who live in
Paris speak French". Training shows every subject's *fact* ``(r1, b)`` but the *implication*
``(r2, c)`` only for a few subjects; the test asks for the implication of the others.

One task, built deterministically from a seed, rendered two ways:

- **symbolic form** (:func:`build_symbolic` -> :class:`SymbolicTask`): one token per subject,
  relation and value, sequences of noise tokens for the one-layer attention model;
- **sentence form** (:func:`build_sentences` -> :class:`SentenceTask`): natural sentences and
  questions with candidate lists, for language models, scored with :func:`mean_rank`.

A chapter shows :meth:`SentenceTask.rows` as a table with :func:`lib.display.markdown_table`.

Both share the split (:func:`assign_groups`, :func:`split_subjects`): subjects are dealt into one
subset per relation pair, each subject gets a fact value of its pair, and within every fact value
the first subjects (in index order) have their implication in training, the rest are held out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, get_args

import torch
from torch import Tensor

from lib import validate

Group = Literal["train_facts", "test_facts", "train_implications", "test_implications"]
"""A group of symbolic examples: whose subjects (training or test) and which relation (fact or implication)."""
GROUPS: tuple[Group, ...] = get_args(Group)
TRAIN_GROUPS: tuple[Group, ...] = ("train_facts", "train_implications", "test_facts")
"""The three groups of the training mix (:meth:`SymbolicTask.train_batch`: equal thirds of every batch)."""

Split = Literal["train", "test"]
"""Subjects whose implication is in training (``"train"``) or held out (``"test"``)."""
SPLITS: tuple[Split, ...] = get_args(Split)

RelationPosition = Literal["fixed", "random"]
"""Where the relation token sits in a symbolic sequence: ``"fixed"`` (the book's default: right before EOS) or
``"random"`` (the official data generator's: at a random position after the subject)."""
RELATION_POSITIONS: tuple[RelationPosition, ...] = get_args(RelationPosition)

TokenKind = Literal["subject", "relation", "fact value", "implication value", "noise", "EOS"]
"""The blocks of the symbolic vocabulary, in vocabulary order."""
TOKEN_KINDS: tuple[TokenKind, ...] = get_args(TokenKind)

# ---------------------------------------------------------------------------------------------
# Relation pairs
# ---------------------------------------------------------------------------------------------

Link = Literal["causal", "counterfactual", "correlated, not causal", "arbitrary"]
"""How a rule's fact relates to its implication in the real world (:attr:`RelationPair.link`):

- ``"causal"``: the fact is why the implication holds (living in Paris is why people there speak French);
- ``"counterfactual"``: the implication values are deliberately wrong (false in the world);
- ``"correlated, not causal"``: the values are real and go together in the world, but the fact does not make the
  implication true of a person (coming from France does not give a person a +33 phone number);
- ``"arbitrary"``: nothing links the fact to the implication (a profession and a favourite colour).
"""
LINKS: tuple[Link, ...] = get_args(Link)


@dataclass(frozen=True)
class RelationPair:
    """One fact -> implication rule and the words that render it.

    Attributes:
        name: short label, e.g. ``"city -> language"``.
        fact_relation: the relation r1 in words (``"lives in"``); also its symbolic token name.
        implication_relation: the relation r2 in words (``"speaks"``).
        implication_map: ``((b_1, c_1), (b_2, c_2), ...)``: fact value -> implication value, one-to-one.
        fact_templates: sentences stating a fact; ``{s}`` is the subject, ``{b}`` the fact value.
        implication_templates: sentences stating an implication; ``{s}`` and ``{c}``.
        questions: evaluation prompts with ``{s}``; a candidate is appended after one space.
        tag: appended to this pair's symbolic token names to keep them apart from another pair's
            (the counterfactual pair uses the same words as the true one).
        link: how the fact relates to the implication in the real world, one of :data:`LINKS`; the one place
            the book's chapters read a rule's kind from (labels, tables, groupings).
        link_reason: one line saying why the rule has that ``link`` (every rule of :data:`PAIRS` has one).
    """

    name: str
    fact_relation: str
    implication_relation: str
    implication_map: tuple[tuple[str, str], ...]
    fact_templates: tuple[str, ...] = ("{s} {r1} {b}.",)
    implication_templates: tuple[str, ...] = ("{s} {r2} {c}.",)
    questions: tuple[str, ...] = ("{s} {r2}",)
    tag: str = ""
    link: Link = "arbitrary"
    link_reason: str = ""

    def __post_init__(self) -> None:
        validate.one_of("link", self.link, LINKS)
        if not isinstance(self.link_reason, str) or "\n" in self.link_reason:
            raise ValueError(f"pair {self.name!r}: link_reason must be one line of text, got {self.link_reason!r}")
        facts = [b for b, _ in self.implication_map]
        if not facts:
            raise ValueError(f"pair {self.name!r}: implication_map is empty")
        first: dict[str, str] = {}
        for b, c in self.implication_map:
            if b in first and first[b] != c:
                raise ValueError(
                    f"pair {self.name!r}: implication map is not a function: {b!r} maps to both {first[b]!r} and {c!r}"
                )
            if b in first:
                raise ValueError(f"pair {self.name!r}: duplicate fact value {b!r}")
            first[b] = c
        _no_duplicates(
            [c for _, c in self.implication_map],
            f"implication values in pair {self.name!r} (the map must be one-to-one)",
        )
        for kind, templates, needs in (
            ("fact_templates", self.fact_templates, ("{s}", "{b}")),
            ("implication_templates", self.implication_templates, ("{s}", "{c}")),
            ("questions", self.questions, ("{s}",)),
        ):
            if not templates:
                raise ValueError(f"pair {self.name!r}: {kind} is empty")
            for t in templates:
                missing = [n for n in needs if n not in t]
                if missing:
                    raise ValueError(f"pair {self.name!r}: template {t!r} in {kind} lacks {missing}")

    @property
    def causal(self) -> bool:
        """Whether the fact is the real-world cause of the implication (``link == "causal"``)."""
        return self.link == "causal"

    @property
    def fact_values(self) -> tuple[str, ...]:
        return tuple(b for b, _ in self.implication_map)

    def implication(self, fact_value: str) -> str:
        """The implication value c of fact value b."""
        return dict(self.implication_map)[fact_value]


def _no_duplicates(values: Sequence[str], what: str) -> None:
    dup = sorted(v for v, count in Counter(values).items() if count > 1)
    if dup:
        raise ValueError(f"duplicate {what}: {dup[:5]}{' ...' if len(dup) > 5 else ''}")


# Real capitals and the (main) language spoken there: every language appears once, so the map is one-to-one.
CITY_LANGUAGE = (
    ("Paris", "French"),
    ("Berlin", "German"),
    ("Madrid", "Spanish"),
    ("Rome", "Italian"),
    ("Tokyo", "Japanese"),
    ("Beijing", "Chinese"),
    ("Moscow", "Russian"),
    ("Lisbon", "Portuguese"),
    ("Athens", "Greek"),
    ("Stockholm", "Swedish"),
    ("Warsaw", "Polish"),
    ("Cairo", "Arabic"),
    ("Ankara", "Turkish"),
    ("Seoul", "Korean"),
    ("Amsterdam", "Dutch"),
    ("Bangkok", "Thai"),
    ("Hanoi", "Vietnamese"),
    ("Helsinki", "Finnish"),
    ("Budapest", "Hungarian"),
    ("Prague", "Czech"),
)


def shifted_map(mapping: Sequence[tuple[str, str]], shift: int) -> tuple[tuple[str, str], ...]:
    """A rule whose fact value ``i`` gets the implication value of mapping ``i + shift`` (mod the length).

    Args:
        mapping: ``((b_0, c_0), (b_1, c_1), ...)``, a one-to-one rule.
        shift: any integer; a shift that is not a multiple of ``len(mapping)`` moves every implication value, so
            no fact value keeps its own (a derangement).
    Returns:
        ``((b_0, c_shift), (b_1, c_{1 + shift}), ...)``, the fact values in their original order.
    """
    if not mapping:
        raise ValueError("mapping must hold at least one (fact value, implication value) pair, got none")
    if not isinstance(shift, int) or isinstance(shift, bool):
        raise ValueError(f"shift must be an int, got {shift!r}")
    n = len(mapping)
    return tuple((b, mapping[(i + shift) % n][1]) for i, (b, _) in enumerate(mapping))


# The counterfactual rule: city i gets the true language of city i + 7 (mod 20). A shift by 7 of
# 20 moves every city, so no city keeps its true language (a fixed, deliberate derangement).
COUNTERFACTUAL_SHIFT = 7
CITY_LANGUAGE_COUNTERFACTUAL = shifted_map(CITY_LANGUAGE, COUNTERFACTUAL_SHIFT)
# Real international (telephone) calling codes. The paper names this pair "Country-Code"; reading "code" as the
# calling code of a phone number is the book's choice.
COUNTRY_CODE = (
    ("France", "+33"),
    ("Germany", "+49"),
    ("Spain", "+34"),
    ("Italy", "+39"),
    ("Japan", "+81"),
    ("China", "+86"),
    ("Brazil", "+55"),
    ("India", "+91"),
    ("Mexico", "+52"),
    ("Egypt", "+20"),
    ("Australia", "+61"),
    ("South Korea", "+82"),
    ("Turkey", "+90"),
    ("Greece", "+30"),
    ("Sweden", "+46"),
    ("Poland", "+48"),
    ("Argentina", "+54"),
    ("the Netherlands", "+31"),
    ("Norway", "+47"),
    ("Thailand", "+66"),
)
# Arbitrary pairings: nothing links a profession to a colour or a sport to a music genre.
PROFESSION_COLOUR = (
    ("doctor", "red"),
    ("lawyer", "blue"),
    ("baker", "green"),
    ("pilot", "yellow"),
    ("teacher", "purple"),
    ("nurse", "orange"),
    ("farmer", "pink"),
    ("plumber", "brown"),
    ("chef", "grey"),
    ("dentist", "black"),
    ("painter", "white"),
    ("journalist", "turquoise"),
)
SPORT_MUSIC = (
    ("tennis", "jazz"),
    ("football", "reggae"),
    ("basketball", "techno"),
    ("golf", "opera"),
    ("rugby", "blues"),
    ("volleyball", "hip hop"),
    ("cricket", "country"),
    ("baseball", "salsa"),
    ("hockey", "punk"),
    ("badminton", "disco"),
    ("handball", "folk"),
    ("squash", "heavy metal"),
)

_CITY_FACTS = ("{s} lives in {b}.", "{s} has made a home in {b}.", "{s} is a resident of {b}.")
_CITY_IMPLICATIONS = ("{s} speaks {c}.", "{s} is fluent in {c}.", "The language {s} speaks is {c}.")
_CITY_QUESTIONS = ("{s} speaks", "Q: Which language does {s} speak?\nA:")

PAIRS: tuple[RelationPair, ...] = (
    RelationPair(
        "city -> language",
        "lives in",
        "speaks",
        CITY_LANGUAGE,
        _CITY_FACTS,
        _CITY_IMPLICATIONS,
        _CITY_QUESTIONS,
        link="causal",
        link_reason="living in a city is why people there speak its language",
    ),
    RelationPair(
        "city -> language (counterfactual)",
        "lives in",
        "speaks",
        CITY_LANGUAGE_COUNTERFACTUAL,
        _CITY_FACTS,
        _CITY_IMPLICATIONS,
        _CITY_QUESTIONS,
        tag=" (cf)",
        link="counterfactual",
        link_reason=f"each city gets another city's language (shifted by {COUNTERFACTUAL_SHIFT} in the list): false",
    ),
    RelationPair(
        "country -> calling code",
        "comes from",
        "has a phone number starting with",
        COUNTRY_CODE,
        ("{s} comes from {b}.", "{s} was born in {b}.", "{s} is a citizen of {b}."),
        (
            "{s}'s phone number starts with {c}.",
            "To call {s}, dial {c} first.",
            "{s} has a phone number beginning with {c}.",
        ),
        ("{s}'s phone number starts with", "Q: Which calling code does {s}'s phone number use?\nA:"),
        link="correlated, not causal",
        link_reason="real calling codes, but where a person comes from does not set their phone number",
    ),
    RelationPair(
        "profession -> colour",
        "works as a",
        "likes the colour",
        PROFESSION_COLOUR,
        ("{s} works as a {b}.", "{s} is a {b} by trade.", "By profession, {s} is a {b}."),
        ("{s}'s favourite colour is {c}.", "{s} loves the colour {c}.", "{s} likes {c} more than any other colour."),
        ("{s}'s favourite colour is", "Q: What is {s}'s favourite colour?\nA:"),
        link="arbitrary",
        link_reason="nothing links a profession to a favourite colour",
    ),
    RelationPair(
        "sport -> music",
        "plays",
        "listens to",
        SPORT_MUSIC,
        ("{s} plays {b}.", "{s} spends the weekends playing {b}.", "{s}'s sport is {b}."),
        ("{s} listens to {c}.", "{s}'s favourite music is {c}.", "{s} enjoys listening to {c}."),
        ("{s} listens to", "Q: Which music does {s} listen to?\nA:"),
        link="arbitrary",
        link_reason="nothing links a sport to a kind of music",
    ),
)
"""The paper's five fact -> implication rules; each one's real-world kind is its :attr:`RelationPair.link`: one
causal (city -> language), one counterfactual (the same kind of rule with deliberately wrong languages), one
correlated but not causal (real calling codes), two arbitrary pairings."""


def minimal_pair(n_facts: int) -> RelationPair:
    """The paper's minimal experiment: abstract facts ``b0 .. b{n-1}``, ``b_i -> c_i``, relations r1 / r2."""
    return RelationPair(
        "r1 -> r2",
        "r1",
        "r2",
        tuple((f"b{i}", f"c{i}") for i in range(n_facts)),
        link="arbitrary",
        link_reason="abstract tokens: nothing links b_i to c_i",
    )


# ---------------------------------------------------------------------------------------------
# Fictitious names
# ---------------------------------------------------------------------------------------------

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kl", "tr", "sh", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "x", "th", "m")
_RESERVED = frozenset(
    w.lower() for p in PAIRS for b, c in p.implication_map for w in (b, c, p.fact_relation, p.implication_relation)
)


def _word(generator: torch.Generator, syllables: int) -> str:
    picks = torch.randint(0, 1 << 30, (2 * syllables + 1,), generator=generator).tolist()
    parts = [_ONSETS[picks[2 * i] % len(_ONSETS)] + _VOWELS[picks[2 * i + 1] % len(_VOWELS)] for i in range(syllables)]
    return ("".join(parts) + _CODAS[picks[-1] % len(_CODAS)]).capitalize()


def fictitious_names(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct invented "First Last" names made of random syllables, the same for the same seed.

    The syllables are drawn at random, so the names are not those of real people (no list of real
    names is involved); a clash with a real name would be a coincidence. Words that are values or
    relations of :data:`PAIRS` (a syllable name can spell "Paris") are never used.
    """
    validate.non_negative_int("n", n)
    generator = torch.Generator().manual_seed(validate.seed(seed))
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        first, last = _word(generator, 2), _word(generator, 2 + (len(names) % 2))
        if first.lower() in _RESERVED or last.lower() in _RESERVED:
            continue  # a person called "Paris" or "Rome" would blur subject and fact
        name = f"{first} {last}"
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


# ---------------------------------------------------------------------------------------------
# The split, shared by both renderings
# ---------------------------------------------------------------------------------------------


def assign_groups(
    n_subjects: int, n_subsets: int, values_per_subset: int, generator: torch.Generator
) -> tuple[list[int], list[int]]:
    """Deal subjects into subsets and, within each subset, onto fact values.

    A random permutation ``order`` of the subjects is dealt round-robin: ``order[k]`` goes to subset
    ``k % n_subsets`` and, as the ``m = k // n_subsets``-th member of that subset, gets value
    ``m % values_per_subset``. Sizes therefore differ by at most one.

    Returns:
        ``subset_of`` and ``value_of``: lists of length ``n_subjects``.
    """
    validate.positive_int("n_subsets", n_subsets)
    validate.positive_int("values_per_subset", values_per_subset)
    if n_subjects < n_subsets:
        raise ValueError(f"fewer subjects ({n_subjects}) than subsets ({n_subsets}): every subset needs subjects")
    order = torch.randperm(n_subjects, generator=generator).tolist()
    subset_of, value_of = [0] * n_subjects, [0] * n_subjects
    for k, subject in enumerate(order):
        subset_of[subject] = k % n_subsets
        value_of[subject] = (k // n_subsets) % values_per_subset
    return subset_of, value_of


def split_subjects(group_of: Sequence[Hashable], train_fraction: float) -> tuple[list[int], list[int]]:
    """Choose whose implication is seen in training: in every group, the first subjects train.

    Args:
        group_of: ``group_of[i]`` is subject i's group (here: its fact value), any hashable labels.
        train_fraction: in a group of ``size`` subjects, the ``int(train_fraction * size + 0.5)``
            (rounded half up) with the smallest indices train; the others are test subjects.

    Returns:
        ``(train, test)``: sorted subject indices.

    Raises:
        ValueError: ``train_fraction`` outside (0, 1), no subjects, or a group left with no training
            or no test subject.
    """
    validate.fraction("train_fraction", train_fraction)
    return _split(group_of, lambda size: _round_half_up(train_fraction * size), f"train_fraction={train_fraction}")


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _split(group_of: Sequence[Hashable], n_train: Callable[[int], int], rule: str) -> tuple[list[int], list[int]]:
    if len(group_of) == 0:
        raise ValueError("no subjects to split")
    members: dict[Hashable, list[int]] = {}
    for subject, group in enumerate(group_of):
        members.setdefault(group, []).append(subject)
    train: list[int] = []
    test: list[int] = []
    for group, subjects in members.items():
        k = n_train(len(subjects))
        if not 0 < k < len(subjects):
            side = "no training subject" if k <= 0 else "no test subject"
            raise ValueError(
                f"group {group!r} has {len(subjects)} subjects: with {rule} it is left with {side}; "
                f"use more subjects or change the split"
            )
        train += subjects[:k]
        test += subjects[k:]
    return sorted(train), sorted(test)


@dataclass(frozen=True)
class _Core:
    """The task before rendering: who has which fact and implication, and who trains."""

    names: list[str]
    pairs: tuple[RelationPair, ...]
    values: list[list[str]]  # per pair, the chosen fact values (in the pair's list order)
    pair_of: list[int]
    fact_of: list[str]
    implication_of: list[str]
    train: list[int]
    test: list[int]


def _build_core(
    pairs: tuple[RelationPair, ...],
    n_subjects: int,
    values_per_pair: int,
    n_train: Callable[[int], int],
    rule: str,
    seed: int,
    names: Sequence[str] | None = None,
) -> _Core:
    validate.seed(seed)
    if not pairs:
        raise ValueError("need at least one relation pair")
    _no_duplicates([p.name for p in pairs], "relation pair names")
    generator = torch.Generator().manual_seed(seed)
    if names is None:
        subject_names = fictitious_names(n_subjects, seed)
    else:
        subject_names = [str(n) for n in names]
        if len(subject_names) != n_subjects:
            raise ValueError(f"got {len(subject_names)} names for n_subjects={n_subjects}")
        _no_duplicates(subject_names, "subject names")
    # Choose each pair's fact values; a fact value already used by an earlier pair is not reused, so
    # the true and the counterfactual city pairs use different cities and never contradict each other.
    values: list[list[str]] = []
    used: set[str] = set()
    for pair in pairs:
        free = [b for b in pair.fact_values if b not in used]
        if len(free) < values_per_pair:
            raise ValueError(
                f"pair {pair.name!r} has only {len(free)} unused fact values, "
                f"values_per_pair={values_per_pair} asks for more"
            )
        pick = sorted(torch.randperm(len(free), generator=generator)[:values_per_pair].tolist())
        chosen = [free[i] for i in pick]
        used.update(chosen)
        values.append(chosen)
    subset_of, value_of = assign_groups(n_subjects, len(pairs), values_per_pair, generator)
    fact_of = [values[p][v] for p, v in zip(subset_of, value_of)]
    implication_of = [pairs[p].implication(b) for p, b in zip(subset_of, fact_of)]
    groups = [p * values_per_pair + v for p, v in zip(subset_of, value_of)]
    train, test = _split(groups, n_train, rule)
    return _Core(subject_names, pairs, values, subset_of, fact_of, implication_of, train, test)


# ---------------------------------------------------------------------------------------------
# Symbolic form (one-layer attention model)
# ---------------------------------------------------------------------------------------------


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
    seed: int = 0

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

        Fits ``lib.train.train``'s ``make_batch``. For a batch size not divisible by 3 the later
        groups get the extra examples. Returns ``x`` (batch_size, seq_len), ``y`` (batch_size,).
        """
        validate.int_at_least("batch_size", batch_size, 3, "one example per training group")
        parts = [self.sample(g, (batch_size + i) // 3, generator) for i, g in enumerate(TRAIN_GROUPS)]
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

    def fixed(
        self, group: Group, per_subject: int = 1, seed: int = 0, device: torch.device | str | None = None
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
    x = noise.clone()
    x[torch.arange(n), where] = task.subject_ids[subjects]
    x[:, -2] = (task.fact_relation_of if fact else task.implication_relation_of)[subjects]
    x[:, -1] = task.eos_id
    return x, (task.fact_of if fact else task.implication_of)[subjects]


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


# ---------------------------------------------------------------------------------------------
# Sentence form (language models)
# ---------------------------------------------------------------------------------------------


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
    seed: int = 0

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
    """

    subject: int
    pair: int
    prompt: str
    candidates: tuple[str, ...]
    answer: int


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
    words = {
        "s": name,
        "b": fact_value,
        "c": pair.implication(fact_value),
        "r1": pair.fact_relation,
        "r2": pair.implication_relation,
    }
    return (
        [t.format(**words) for t in pair.fact_templates],
        [t.format(**words) for t in pair.implication_templates],
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
        pair = self.pairs[self.pair_of[subject]]
        return template.format(
            s=self.names[subject],
            b=self.fact_of[subject],
            c=self.implication_of[subject],
            r1=pair.fact_relation,
            r2=pair.implication_relation,
        )

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
            for q in self.pairs[p].questions:
                out.append(Question(i, p, self._fill(q, i), cands, answer_index(cands, self.implication_of[i])))
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


# ---------------------------------------------------------------------------------------------
# Metric
# ---------------------------------------------------------------------------------------------


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
    rows = [torch.as_tensor(r, dtype=torch.float64).flatten().cpu() for r in scores]
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
