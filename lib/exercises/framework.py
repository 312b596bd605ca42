"""The exercise-check framework: compare a learner's function with the book's reference.

A check raises :class:`CheckFailed` with a message that says what was called, what came back and what was
expected; :func:`passing_or_reference` lets the chapter go on with the reference when a check fails.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import torch

from lib.core.device import pick_device, to_device

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


def kind_of(value: Any) -> str:
    """What ``value`` is, in words: ``"a tensor of shape (3, 4) and dtype torch.float32"``, ``"a list"``."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    return f"a {type(value).__name__}"


def _dtype_family(t: torch.Tensor) -> str:
    return "bool" if t.dtype == torch.bool else "float" if t.is_floating_point() or t.is_complex() else "int"


def _tensor_difference(path: str, got: Any, expected: torch.Tensor, atol: float, rtol: float) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"{path} is {kind_of(got)}, expected {kind_of(expected)}"
    if got.shape != expected.shape:
        return f"{path} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if _dtype_family(got) != _dtype_family(expected):
        return f"{path} has dtype {got.dtype}, expected {expected.dtype}"
    g, e = got.detach().cpu(), expected.detach().cpu()
    if expected.is_floating_point():
        g = g.to(e.dtype)
        close = torch.isclose(g, e, atol=atol, rtol=rtol) | (g.isnan() & e.isnan())
    else:
        close = g == e
    if bool(close.all()):
        return None
    first = tuple(int(k) for k in (~close).nonzero()[0])
    index = ", ".join(map(str, first))
    return (
        f"{path}[{index}] is {g[first].item()!r}, expected {e[first].item()!r} "
        f"({int((~close).sum())} of {close.numel()} entries differ)"
    )


def difference(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4, path: str = "the output") -> str | None:
    """Where ``got`` first differs from ``expected``, in words (``None`` if they agree).

    Tensors and floats are compared with a tolerance; containers recursively, with their type (a list is not a tuple)
    and their keys or length. The answer names the part that differs (``the output["W_Q"][3, 1]``), both values, and
    the shapes or types when those differ.
    """
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(path, got, expected, atol, rtol)
    if isinstance(expected, float):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return f"{path} is {kind_of(got)}, expected a float"
        if not abs(got - expected) <= atol + rtol * abs(expected):
            return f"{path} is {got!r}, expected {expected!r}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{path} is {kind_of(got)}, expected a dict"
        if got.keys() != expected.keys():
            return f"{path} has keys {sorted(map(str, got))}, expected {sorted(map(str, expected))}"
        for key, value in expected.items():
            found = difference(got[key], value, atol, rtol, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)):
        if type(got) is not type(expected):
            return f"{path} is {kind_of(got)}, expected a {type(expected).__name__}"
        if len(got) != len(expected):
            return f"{path} has {len(got)} entries, expected {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            found = difference(g, e, atol, rtol, f"{path}[{k}]")
            if found:
                return found
        return None
    try:
        equal = bool(got == expected)
    except Exception:  # e.g. a tensor compared with a string
        equal = False
    return None if equal else f"{path} is {_short(got, 120)}, expected {_short(expected, 120)}"


def same(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Whether ``got`` agrees with ``expected`` (see :func:`difference`)."""
    return difference(got, expected, atol, rtol) is None


def compare(
    name: str,
    learner: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Iterable[Sequence[Any]],
    *,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    on_device: bool = True,
) -> None:
    """Call ``learner(*case)`` and ``reference(*case)`` for every case; raise on the first disagreement.

    The message names the case, its input, the part of the output that differs (:func:`difference`) and both outputs;
    an exception raised inside the learner's function is reported as the learner's, with its input. Where the chapter
    runs on a GPU, one case runs again there (``on_device=False``: not for a function its chapter calls on the CPU,
    e.g. with float64 or an SVD, which a Mac's GPU does not have).
    """
    cases = list(cases)
    for i, case in enumerate(cases, 1):
        expected = reference(*case)
        inputs = ", ".join(_short(a, 120) for a in case)
        try:
            got = learner(*case)
        except NotImplementedError:
            raise CheckFailed(
                f"{name}: not implemented yet; replace the `raise NotImplementedError` in your stub"
            ) from None
        except CheckFailed:
            raise
        except Exception as error:
            raise CheckFailed(
                f"{name}: your function raised {type(error).__name__} on case {i} of {len(cases)}: {error}\n"
                f"  input:    {inputs}"
            ) from None
        found = difference(got, expected, atol, rtol)
        if found:
            raise CheckFailed(
                f"{name}: case {i} of {len(cases)} differs: {found}.\n  input:    {inputs}\n"
                f"  expected: {_short(expected)}\n  got:      {_short(got)}"
            )
    device = pick_device()
    ran = on_device and device.type != "cpu" and _compare_on_device(name, learner, reference, cases, device, atol, rtol)
    also = f" (and one on {device})" if ran else ""
    print(f"PASSED {name}: all {len(cases)} cases match the reference{also}.")


def _compare_on_device(
    name: str,
    learner: Callable[..., Any],
    reference: Callable[..., Any],
    cases: list[Sequence[Any]],
    device: torch.device,
    atol: float,
    rtol: float,
) -> bool:
    """The first case with a tensor or a module, again with them on ``device`` (modules copied): a function that
    works on the CPU must also work where the chapter runs it. Cases the reference itself cannot run there are
    skipped; returns whether a case ran."""
    for case in cases:
        if not any(isinstance(arg, (torch.Tensor, torch.nn.Module)) for arg in case):
            continue
        moved = [
            copy.deepcopy(arg).to(device) if isinstance(arg, torch.nn.Module) else to_device(arg, device)
            for arg in case
        ]
        try:
            expected = to_device(reference(*moved), "cpu")
        except Exception:  # this case is not made for a device (e.g. an object holding CPU tensors)
            continue
        try:
            got = to_device(learner(*moved), "cpu")
        except Exception as error:
            raise CheckFailed(
                f"{name}: your function works on the CPU but raised {type(error).__name__} with its inputs on "
                f"{device}: {error}\n  keep every tensor you make on the inputs' device (e.g. device=x.device)"
            ) from None
        found = difference(got, expected, atol, rtol)
        if found:
            raise CheckFailed(f"{name}: with its inputs on {device} your function differs: {found}")
        return True
    return False


BOOK_VERSION = "this is the book's version, not yours: run your cell above first (Shift+Enter), then this one"

# Every function passing_or_reference has handed back in place of a learner's, by id (kept alive, so no id is
# reused): a check cell run again finds the name still holding it, and must not report the book's own version as
# the learner's. Identity with ``reference`` alone misses a reference written as a lambda in the check cell, which
# is a new object every time the cell runs.
_handed_back: dict[int, Callable[..., Any]] = {}


def passing_or_reference(learner: F, check: Callable[[F], None], reference: F) -> F:
    """The learner's function if ``check`` passes it, else ``reference``, so the cells after an exercise still run.

    A failing check prints why and that the chapter goes on with the reference. Given the book's version itself
    (``reference``, or what an earlier call handed back: the check cell run again without the stub above it), the
    check is not run: it would pass the book's own function as the learner's; this says so instead. Under
    ``CIRCUITS_STRICT_CHECKS=1`` (set by ``make``) either is raised, so a broken solution cell fails the build.
    """
    name = getattr(check, "__name__", "check")
    try:
        if learner is reference or id(learner) in _handed_back:
            raise CheckFailed(f"{name}: {BOOK_VERSION}")
        check(learner)
    except CheckFailed as failure:
        if os.environ.get(STRICT_ENV) == "1":
            raise
        print(f"{failure}\nNot solved yet: the cells below use the book's version until your function passes.")
        _handed_back[id(reference)] = reference
        return reference
    return learner
