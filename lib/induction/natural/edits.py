"""Removing only part of what a head does (chapter 8): its attention to the keys an induction head would use.

A whole-head ablation (:mod:`lib.induction.ablation`) removes everything a head writes: its induction and whatever
else it does from the same keys and the rest of the window. This edit keeps the head and removes one thing: in its
attention pattern, the entries at keys that follow an earlier occurrence of the query's token
(:func:`lib.induction.scores.prefix_matching_mask`) are set to zero, and the pattern is *not* renormalised, so the
head's output loses exactly the values it read from those keys. At a query whose token has not occurred before,
nothing changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from lib.core import validate
from lib.core.heads import Head, check_heads
from lib.induction import scores
from lib.induction.natural.probes import WINDOW_CHUNK

if TYPE_CHECKING:
    from transformer_lens.hook_points import HookPoint
    from transformer_lens.model_bridge import TransformerBridge


def without_prefix_matching_loss(
    model: TransformerBridge, tokens: torch.Tensor, head: Head, chunk: int = WINDOW_CHUNK
) -> torch.Tensor:
    """Per-token loss with ``head``'s attention to prefix-matching keys removed (see the module docstring).

    Args:
        tokens: ``(batch, seq) int64``, run ``chunk`` sequences at a time under ``torch.inference_mode``.
        head: ``(layer, head)``.

    Returns:
        ``(batch, seq - 1)``, the convention of :func:`lib.induction.scores.per_token_loss`.
    """
    validate.token_batch(tokens)
    validate.positive_int("chunk", chunk)
    ((layer, h),) = check_heads(model, [head])
    losses = []
    for start in range(0, len(tokens), chunk):
        part = tokens[start : start + chunk]
        keep = (~scores.prefix_matching_mask(part)).float()  # (batch, query, key)

        def edit(pattern: torch.Tensor, hook: HookPoint, keep: torch.Tensor = keep) -> torch.Tensor:
            pattern = pattern.clone()  # (batch, heads, query, key)
            pattern[:, h] *= keep.to(pattern.dtype)
            return pattern

        with torch.inference_mode(), model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_pattern", edit)]):
            losses.append(scores.next_token_loss(model(part), part))
    return torch.cat(losses)
