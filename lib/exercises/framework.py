"""The exercise-check framework: compare a learner's function with the book's reference.

A check raises :class:`CheckFailed` with a message that says what was called, what came back and what was
expected; :func:`passing_or_reference` lets the chapter go on with the reference when a check fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import torch

STRICT_ENV = "CIRCUITS_STRICT_CHECKS"

F = TypeVar("F", bound=Callable[..., Any])


class CheckFailed(AssertionError):
    """A learner's answer disagrees with the reference."""


def _short(value: Any, limit: int = 300) -> str:
    if isinstance(value, torch.Tensor):
        text = f"tensor(shape={tuple(value.shape)}, dtype={value.dtype}) {value.detach().cpu().flatten()[:8].tolist()}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def same(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Equality that treats tensors and floats with a tolerance and recurses into containers."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return False
        if expected.is_floating_point():
            return torch.allclose(got.detach().cpu().to(expected.dtype), expected.detach().cpu(), atol=atol, rtol=rtol)
        return torch.equal(got.detach().cpu(), expected.detach().cpu())
    if isinstance(expected, float):
        return isinstance(got, (int, float)) and abs(got - expected) <= atol + rtol * abs(expected)
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same(got[k], v, atol, rtol) for k, v in expected.items())
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(same(g, e, atol, rtol) for g, e in zip(got, expected))
        )
    return got == expected


def compare(
    name: str,
    learner: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Iterable[Sequence[Any]],
    *,
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Call ``learner(*case)`` and ``reference(*case)`` for every case; raise on the first disagreement."""
    cases = list(cases)
    for i, case in enumerate(cases, 1):
        expected = reference(*case)
        try:
            got = learner(*case)
        except NotImplementedError:
            raise CheckFailed(
                f"{name}: not implemented yet; replace the `raise NotImplementedError` in your stub"
            ) from None
        if not same(got, expected, atol, rtol):
            inputs = ", ".join(_short(a, 120) for a in case)
            raise CheckFailed(
                f"{name}: case {i} of {len(cases)} differs.\n  input:    {inputs}\n"
                f"  expected: {_short(expected)}\n  got:      {_short(got)}"
            )
    print(f"PASSED {name}: all {len(cases)} cases match the reference.")


def passing_or_reference(learner: F, check: Callable[[F], None], reference: F) -> F:
    """The learner's function if ``check`` passes it, else ``reference``, so the cells after an exercise still run.

    A failing check prints why and that the chapter goes on with the reference. Under ``CIRCUITS_STRICT_CHECKS=1``
    (set by ``make``) the failure is raised instead, so a broken solution cell fails the build.
    """
    try:
        check(learner)
    except CheckFailed as failure:
        if os.environ.get(STRICT_ENV) == "1":
            raise
        print(f"{failure}\nThe cells below use the book's reference until your function passes.")
        return reference
    return learner
