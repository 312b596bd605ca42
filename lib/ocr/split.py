"""Subjects of the OCR task: fictitious names, the groups they are dealt into, the train/test split."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import torch

from lib.core import seeds, validate
from lib.ocr.relations import PAIRS, RelationPair, _no_duplicates

Group = Literal["train_facts", "test_facts", "train_implications", "test_implications"]
"""A group of symbolic examples: whose subjects (training or test) and which relation (fact or implication)."""

GROUPS: tuple[Group, ...] = get_args(Group)

TRAIN_GROUPS: tuple[Group, ...] = ("train_facts", "train_implications", "test_facts")
"""The three groups of the training mix (:meth:`SymbolicTask.train_batch`: equal thirds of every batch)."""

Split = Literal["train", "test"]
"""Subjects whose implication is in training (``"train"``) or held out (``"test"``)."""

SPLITS: tuple[Split, ...] = get_args(Split)

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


def fictitious_names(n: int, seed: int = seeds.seed(0)) -> list[str]:
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
