"""Validation of public inputs, shared by every module: each check raises a ``ValueError`` that names the
argument, what is allowed and what it got, and returns the value so it can be used inline.

    steps = validate.positive_int("steps", steps)
    kind = validate.one_of("kind", kind, ("factorized", "merged"))
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TypeVar

import torch

T = TypeVar("T")


#: Seeds accepted by ``torch.Generator.manual_seed`` and by :func:`lib.core.device.seed_everything`.
SEED_LIMIT = 2**63


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def int_at_least(name: str, value: object, minimum: int, why: str = "") -> int:
    """``value`` as an integer ``>= minimum``; ``why`` (optional) is added to the message."""
    if not _is_int(value) or value < minimum:  # type: ignore[operator]
        allowed = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
        reason = f" ({why})" if why else ""
        raise ValueError(f"{name} must be {allowed}{reason}, got {value!r}")
    return value  # type: ignore[return-value]


def positive_int(name: str, value: object) -> int:
    """``value`` as an integer ``>= 1``."""
    return int_at_least(name, value, 1)


def non_negative_int(name: str, value: object) -> int:
    """``value`` as an integer ``>= 0``."""
    return int_at_least(name, value, 0)


def index(name: str, value: object, size: int, what: str = "") -> int:
    """``value`` as an integer in ``[0, size)``; ``what`` (optional) follows the value in the message."""
    if not _is_int(value) or not 0 <= value < size:  # type: ignore[operator]
        where = f" in {what}" if what else ""
        raise ValueError(f"{name} must be an integer in [0, {size - 1}], got {value!r}{where}")
    return value  # type: ignore[return-value]


def seed(value: object, name: str = "seed") -> int:
    """``value`` as a seed: an integer in ``[0, 2**63)``."""
    if not _is_int(value) or not 0 <= value < SEED_LIMIT:  # type: ignore[operator]
        raise ValueError(f"{name} must be an integer in [0, 2**63), got {value!r}")
    return value  # type: ignore[return-value]


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def positive_number(name: str, value: object) -> float:
    """``value`` as a finite number ``> 0``."""
    if not _is_real(value) or not value > 0:  # type: ignore[operator]
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def non_negative_number(name: str, value: object) -> float:
    """``value`` as a finite number ``>= 0``."""
    if not _is_real(value) or not value >= 0:  # type: ignore[operator]
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def fraction(name: str, value: object) -> float:
    """``value`` as a number strictly between 0 and 1."""
    if not _is_real(value) or not 0 < value < 1:  # type: ignore[operator]
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def unit_interval(name: str, value: object) -> float:
    """``value`` as a number in ``[0, 1]``."""
    if not _is_real(value) or not 0 <= value <= 1:  # type: ignore[operator]
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]


def unit_interval_pair(name: str, value: object) -> tuple[float, float]:
    """``value`` as a tuple of two numbers in ``[0, 1)`` (Adam's betas)."""
    if not (isinstance(value, tuple) and len(value) == 2 and all(_is_real(v) and 0 <= v < 1 for v in value)):
        raise ValueError(f"{name} must be a pair of numbers in [0, 1), got {value!r}")
    return (float(value[0]), float(value[1]))


def one_of(name: str, value: T, allowed: Collection[T]) -> T:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def _described(value: object) -> str:
    return f"shape {tuple(value.shape)} {value.dtype}" if isinstance(value, torch.Tensor) else type(value).__name__


def token_ids(tokens: object, axes: Sequence[str], name: str = "tokens") -> torch.Tensor:
    """``tokens`` if it is an int64 tensor with one axis per name in ``axes`` and at least one entry.

    Reads only the shape and dtype, never the values: free on every device. :func:`token_range` checks the ids.
    """
    shape = f"({axes[0]},)" if len(axes) == 1 else f"({', '.join(axes)})"
    if not (isinstance(tokens, torch.Tensor) and tokens.ndim == len(axes) and tokens.dtype == torch.int64):
        raise ValueError(f"{name} must be a {shape} int64 tensor, got {_described(tokens)}")
    if tokens.numel() == 0:
        raise ValueError(f"{name} must hold at least one token id, got shape {tuple(tokens.shape)}")
    return tokens


def token_batch(tokens: object, name: str = "tokens") -> torch.Tensor:
    """``tokens`` if it is a ``(batch, seq) int64`` tensor of token ids with at least one entry (:func:`token_ids`)."""
    return token_ids(tokens, ("batch", "seq"), name)


def token_range(tokens: torch.Tensor, d_vocab: int, name: str = "tokens") -> torch.Tensor:
    """``tokens`` if every id is in ``[0, d_vocab)``.

    Reads one min/max pair back from the tensor's device: one host sync on an accelerator, a few microseconds on
    the CPU. Call it at public entry points, once per call, not per element or per head.
    """
    low, high = torch.stack([tokens.min(), tokens.max()]).tolist()
    if low < 0 or high >= d_vocab:
        raise ValueError(f"{name} must be token ids in [0, {d_vocab - 1}], got {low if low < 0 else high}")
    return tokens


def float_tensor(name: str, value: object, axes: str, min_ndim: int) -> torch.Tensor:
    """``value`` if it is a floating-point tensor with at least ``min_ndim`` axes and at least one entry; ``axes``
    names them in the message (``"(..., batch, seq - 1)"``). Reads only the shape and dtype."""
    if not (isinstance(value, torch.Tensor) and value.is_floating_point() and value.ndim >= min_ndim):
        raise ValueError(f"{name} must be a float tensor {axes}, got {_described(value)}")
    if value.numel() == 0:
        raise ValueError(f"{name} must have at least one entry, got shape {tuple(value.shape)}")
    return value
