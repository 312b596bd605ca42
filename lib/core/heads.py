"""Attention heads by name: ``(layer, head)`` pairs, ``"L1H3"`` names, and their checks."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lib.core import validate

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


Head = tuple[int, int]
"""``(layer, head)``."""


def all_heads(model: TransformerBridge) -> list[Head]:
    """Every ``(layer, head)`` of ``model``, layer by layer."""
    return [(layer, head) for layer in range(model.cfg.n_layers) for head in range(model.cfg.n_heads)]


def head_name(head: Head) -> str:
    """``(1, 3)`` -> ``"L1H3"``: the name of a head everywhere in the book (tables, figures, widgets)."""
    if not (isinstance(head, (tuple, list)) and len(head) == 2):
        raise ValueError(f"a head must be a (layer, head) pair, got {head!r}")
    layer = validate.non_negative_int("layer", head[0])
    return _name(layer, validate.non_negative_int("head", head[1]))


def listed(heads: Iterable[Head]) -> str:
    """``[(1, 3), (1, 5)]`` -> ``"L1H3, L1H5"``; no heads -> ``"none"`` (a printed line reads as prose, not ``[]``)."""
    return ", ".join(head_name(h) for h in heads) or "none"


def _name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def parse_head_name(name: str) -> Head:
    """``"L1H3"`` -> ``(1, 3)``, the inverse of :func:`head_name`.

    Raises:
        ValueError: ``name`` is not ``"L<layer>H<head>"`` with two non-negative integers.
    """
    match = _HEAD_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"name must look like 'L1H3' (L<layer>H<head>), got {name!r}")
    return int(match[1]), int(match[2])


_HEAD_NAME = re.compile(r"L(\d+)H(\d+)")


def head_names(layers: int, heads: int) -> list[str]:
    """``L{layer}H{head}`` for every head of a model with ``layers`` x ``heads`` heads, layer by layer."""
    return [_name(l, h) for l in range(layers) for h in range(heads)]


def check_head(model: TransformerBridge, head: object, name: str = "head") -> Head:
    """``head`` as a ``(layer, head)`` pair naming a head of ``model``.

    Raises:
        ValueError: ``head`` is not a pair of integers in range; the message names the argument ``name``.
    """
    if not (isinstance(head, (tuple, list)) and len(head) == 2):
        raise ValueError(f"{name} must be a (layer, head) pair, got {head!r}")
    return (
        validate.index(f"{name}'s layer", head[0], model.cfg.n_layers),
        validate.index(f"{name}'s head", head[1], model.cfg.n_heads),
    )


def check_heads(model: TransformerBridge, heads: Iterable[object]) -> tuple[Head, ...]:
    """Validate distinct heads of ``model`` (e.g. a set to remove together); returns them as a tuple.

    Raises:
        ValueError: an entry is not a pair of integers naming a head of ``model``, or a head is listed twice.
    """
    out: list[Head] = []
    for entry in heads:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise ValueError(f"a head must be a (layer, head) pair, got {entry!r}")
        layer = validate.index("layer", entry[0], model.cfg.n_layers, repr(entry))
        head = validate.index("head", entry[1], model.cfg.n_heads, repr(entry))
        out.append((layer, head))
    repeated = sorted({h for h in out if out.count(h) > 1})
    if repeated:
        raise ValueError(f"heads listed more than once: {[_name(*h) for h in repeated]}; list each head once")
    return tuple(out)
