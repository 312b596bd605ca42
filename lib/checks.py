"""Checks for learners' exercise answers.

Every check compares the learner's function with the book's reference on a few inputs and either
prints one line saying it passed, or raises :class:`CheckFailed` naming the input, what was expected
and what came back. Chapter-specific checks are built on :func:`compare`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import torch


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
        return isinstance(got, dict) and got.keys() == expected.keys() and all(same(got[k], v, atol, rtol) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(expected) and all(same(g, e, atol, rtol) for g, e in zip(got, expected))
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
            raise CheckFailed(f"{name}: not implemented yet; replace the `raise NotImplementedError` in your stub") from None
        if not same(got, expected, atol, rtol):
            inputs = ", ".join(_short(a, 120) for a in case)
            raise CheckFailed(f"{name}: case {i} of {len(cases)} differs.\n  input:    {inputs}\n  expected: {_short(expected)}\n  got:      {_short(got)}")
    print(f"PASSED {name}: all {len(cases)} cases match the reference.")


# ---------------------------------------------------------------------------------------------
# Out-of-context reasoning (chapters 1-4)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------


def check_prefix_matching_score(learner: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Exercise: ``prefix_matching_score(pattern (batch, heads, q, k), tokens (batch, seq)) -> (heads,)``."""
    from lib.scores import prefix_matching_score

    g = torch.Generator().manual_seed(5)
    cases = []
    for batch, heads, seq, vocab in ((1, 1, 6, 3), (2, 3, 12, 5), (4, 2, 20, 8)):
        tokens = torch.randint(0, vocab, (batch, seq), generator=g)
        tokens[:, -1] = tokens[:, 0]  # at least one repeat per row
        scores = torch.randn(batch, heads, seq, seq, generator=g).masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        cases.append((scores.softmax(-1), tokens))
    compare("prefix_matching_score", learner, prefix_matching_score, cases)


def check_previous_token_head(learner: Callable[..., dict]) -> None:
    """Exercise: ``previous_token_head_weights(layout, strength) -> {"W_Q", "W_K", "W_V", "W_O"}``."""
    from lib.induction import HandBuiltLayout, previous_token_head_weights

    cases = [(HandBuiltLayout(vocab, seq), strength) for vocab, seq, strength in ((5, 8, 1.0), (12, 10, 20.0), (32, 45, 20.0))]
    compare("previous_token_head_weights", learner, previous_token_head_weights, cases)
