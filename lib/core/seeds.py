"""The seed sweep: one switch, ``CIRCUITS_SEED=k``, moves every seed the book chooses.

A claim is a result only if it holds on seeds it was not tuned on. With ``CIRCUITS_SEED=k`` (k >= 1) every seed a
chapter chooses (model weights, training batches, evaluation sets and probes, bootstrap draws, the OCR tasks' names
and splits) becomes ``base + k * STRIDE``: another, unrelated draw of the same experiment. Unset, or ``0``, every
seed is the book's own (``seed(base) == base``), so the chapters print exactly what the book shows.

The book's code calls :func:`seed` where it *chooses* a seed (a chapter's ``seed=seeds.seed(0)``, and
:data:`lib.core.tokens.EVAL_SEED`); lib's functions stay plain functions of the seed they are given, so a
learner's function and lib's reference agree on every seed. Shipped runs (checkpoints and bench JSONs in
``lib/data``) stay as shipped: only the draws that evaluate them move. ``make seeds`` runs every chapter on
alternate seeds.
"""

from __future__ import annotations

import functools
import os

import torch

from lib.core import validate

SEED_ENV = "CIRCUITS_SEED"
"""The environment variable that picks the seed offset, e.g. ``CIRCUITS_SEED=1``."""

STRIDE = 1_000_000
"""How far one step of the offset moves a seed: every base seed the book uses is below it, so the seeds of one
offset never meet those of another."""


def parse_offset(text: str | None) -> int:
    """The offset that ``text`` (the value of ``CIRCUITS_SEED``) names: ``None`` or blank is 0.

    Raises:
        ValueError: ``text`` is not a non-negative integer.
    """
    if text is None or not text.strip():
        return 0
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"${SEED_ENV} must be a non-negative integer, got {text!r}") from None
    return validate.non_negative_int(f"${SEED_ENV}", value)


@functools.cache
def offset() -> int:
    """The offset in force: ``CIRCUITS_SEED``, read once per process (0 when unset).

    Raises:
        ValueError: ``CIRCUITS_SEED`` is not a non-negative integer.
    """
    return parse_offset(os.environ.get(SEED_ENV))


def seed(base: int) -> int:
    """The seed in force for the book's seed ``base``: ``base`` itself by default, ``base + offset() * STRIDE``.

    Raises:
        ValueError: ``base`` is not an integer in ``[0, STRIDE)``, or the moved seed is not a valid seed.
    """
    validate.index("base seed", base, STRIDE)
    return validate.seed(base + offset() * STRIDE, f"seed {base} moved by ${SEED_ENV}={offset()}")


def generator(base: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`seed` of ``base``."""
    return torch.Generator().manual_seed(seed(base))


def announce() -> None:
    """Print the seed in force when it is not the book's own (a chapter calls it at its top); print nothing else."""
    if offset():
        print(
            f"{SEED_ENV}={offset()}: every seed s this chapter chooses is s + {offset() * STRIDE:,};\n"
            "  shipped runs stay as shipped, the draws that evaluate them move"
        )
