"""Remove attention heads at test time and measure what the model loses (Olsson et al. 2022).

Two ways to remove a head, both by zeroing its output ``z`` (``blocks.L.attn.hook_z``, the head's
attention-weighted values, before ``W_O``); the layer's output bias ``b_O`` is shared by the heads and stays:

- **full ablation**: nothing else is touched, so every later head sees a changed residual stream and may
  attend elsewhere;
- **pattern-preserving ablation**: the clean run's attention patterns are recorded first, and in the
  ablated run every head of every layer is forced (``hook_pattern``) to attend exactly as it did. Only the
  removed head's *values* are gone: its direct effect on the logits and its effect through later heads'
  values. What later heads would have done differently because their *queries or keys* changed (Q- and
  K-composition) is kept out.

In an attention-only model without LayerNorm, a pattern-preserving ablation subtracts exactly the logit
terms of every path that starts at the head (:func:`head_path_logits`).

What replaces the head's output (:data:`REPLACEMENTS`):

- **zero** (Olsson et al.'s choice, the default): ``z = 0``. The head's average output goes too, so the
  residual stream is shifted by a constant that the rest of the model never saw in training;
- **mean**: ``z`` = its mean over the sequences of the batch, position by position (from the clean run on
  the same tokens). Only what the head writes *differently for different inputs* is removed; its average
  contribution, e.g. what it writes while resting on BOS, stays.
- **resample**: ``z`` = what the head wrote, at the same position, in the clean run on *another* sequence of the
  batch (sequence ``b`` gets sequence ``b + 1``'s, cyclically; the batch must hold two or more). The head's output
  stays one it really produces, typical in size and statistics, but carries the wrong sequence's information.

Many ablations run in one forward pass: the batch is repeated once per ablation (batch axis = ablations x
sequences) and the hooks zero a different set of heads in each block. Hooks are removed when a call
returns or raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal, get_args

import torch

from lib.core import validate
from lib.core.heads import Head, all_heads, check_heads
from lib.induction.scores import next_token_loss

if TYPE_CHECKING:
    from transformer_lens.hook_points import HookPoint
    from transformer_lens.model_bridge import TransformerBridge


Kind = Literal["full", "pattern-preserving"]

KINDS: tuple[Kind, ...] = get_args(Kind)
"""The two kinds of ablation (see the module docstring)."""

Replacement = Literal["zero", "mean", "resample"]

REPLACEMENTS: tuple[Replacement, ...] = get_args(Replacement)
"""What replaces a removed head's output ``z`` (see the module docstring)."""

Hook = Callable[[torch.Tensor, "HookPoint"], torch.Tensor]
"""A transformer_lens forward hook: ``(activation, hook point) -> replacement activation``."""

_NO_ABLATIONS = "ablations is empty: give at least one set of heads (an empty set means the clean model)"


def hooks_on(model: TransformerBridge, include_permanent: bool = False) -> int:
    """How many hook functions are attached to ``model``'s hook points (0 when no ablation runs).

    Permanent hooks (e.g. the smeared keys of :mod:`lib.induction.smear`) are part of the model and counted only with
    ``include_permanent``. Torch-level hooks are counted too, so hooks added without transformer_lens' bookkeeping
    do not hide.
    """
    points = {id(point): point for point in model.hook_dict.values()}.values()
    count = 0
    for point in points:
        permanent = 0 if include_permanent else sum(handle.is_permanent for handle in point.fwd_hooks)
        count += len(point._forward_hooks) + len(point._forward_pre_hooks) - permanent
        count += sum(include_permanent or not handle.is_permanent for handle in point.bwd_hooks)
    return count


def recorded_patterns(model: TransformerBridge, tokens: torch.Tensor) -> list[torch.Tensor]:
    """The clean run's attention patterns, one ``(batch, n_heads, query, key)`` tensor per layer."""
    return _record(model, tokens, "hook_pattern")


def mean_outputs(model: TransformerBridge, tokens: torch.Tensor) -> list[torch.Tensor]:
    """Every head's output ``z`` in the clean run, averaged over the sequences: what a mean ablation puts back.

    Returns:
        one ``(seq, n_heads, d_head)`` tensor per layer (the mean over the batch of ``hook_z``).
    """
    return [z.mean(dim=0) for z in _record(model, tokens, "hook_z")]


def resampled_outputs(model: TransformerBridge, tokens: torch.Tensor) -> list[torch.Tensor]:
    """Every head's output ``z`` in the clean run on another sequence: what a resample ablation puts back.

    Returns:
        one ``(batch, seq, n_heads, d_head)`` tensor per layer: entry ``b`` is ``hook_z`` of sequence
        ``(b + 1) % batch``.
    """
    validate.token_batch(tokens)
    if tokens.shape[0] < 2:
        raise ValueError(f"resampling needs a batch of at least 2 sequences, got {tokens.shape[0]}")
    return [z.roll(-1, dims=0) for z in _record(model, tokens, "hook_z")]


def replacement_outputs(
    model: TransformerBridge, tokens: torch.Tensor, replacement: Replacement
) -> list[torch.Tensor | None]:
    """What replaces a removed head's ``z`` in each layer (``None`` for zero): see :data:`REPLACEMENTS`.

    Returns:
        one tensor per layer that broadcasts against ``hook_z`` ``(batch, seq, n_heads, d_head)``.
    """
    validate.one_of("replacement", replacement, REPLACEMENTS)
    if replacement == "mean":
        return list(mean_outputs(model, tokens))
    if replacement == "resample":
        return list(resampled_outputs(model, tokens))
    return [None] * model.cfg.n_layers


def _record(model: TransformerBridge, tokens: torch.Tensor, hook: str) -> list[torch.Tensor]:
    """``blocks.{layer}.attn.{hook}`` of the clean run, one tensor per layer."""
    return _record_layers(model, tokens, range(model.cfg.n_layers), hook)


def _record_layers(
    model: TransformerBridge, tokens: torch.Tensor, layers: Iterable[int], hook: str = "hook_z"
) -> list[torch.Tensor]:
    """``blocks.{layer}.attn.{hook}`` of the clean run, one tensor per layer of ``layers``."""
    names = [f"blocks.{layer}.attn.{hook}" for layer in layers]
    _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
    return [cache[name] for name in names]


def ablated_logits(
    model: TransformerBridge,
    tokens: torch.Tensor,
    ablations: Sequence[Iterable[Head]],
    kind: Kind = "full",
    replacement: Replacement = "zero",
) -> torch.Tensor:
    """Logits with each set of heads in ``ablations`` removed, all in one forward pass.

    Args:
        tokens: ``(batch, seq) int64``.
        ablations: ``n`` sets of heads; each set is removed together (an empty set = the clean model).
        kind: ``"full"`` or ``"pattern-preserving"`` (see the module docstring).
        replacement: ``"zero"``, ``"mean"`` or ``"resample"``: what the removed heads' ``z`` becomes
            (:func:`replacement_outputs` of ``tokens``).

    Returns:
        ``(n, batch, seq, vocab)``, computed under ``torch.inference_mode``.
    """
    validate.one_of("kind", kind, KINDS)
    validate.one_of("replacement", replacement, REPLACEMENTS)
    validate.token_batch(tokens)
    sets = [check_heads(model, heads) for heads in ablations]
    if not sets:
        raise ValueError(_NO_ABLATIONS)
    n, (batch, seq) = len(sets), tokens.shape
    cfg = model.cfg
    device = tokens.device
    keep = torch.ones(n, cfg.n_layers, cfg.n_heads, device=device)
    for i, heads in enumerate(sets):
        for layer, head in heads:
            keep[i, layer, head] = 0.0

    def remove_heads(layer: int, mean: torch.Tensor | None) -> Hook:
        scale = keep[:, layer, None, None, :, None]  # (n, 1, 1, heads, 1)

        def hook(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:  # z: (n * batch, seq, heads, d_head)
            kept = z.view(n, batch, *z.shape[1:]) * scale.to(z.dtype)
            if mean is not None:  # (seq or batch x seq, heads, d_head), broadcast over ablations
                kept = kept + (1 - scale.to(z.dtype)) * mean.to(z.dtype)
            return kept.view(z.shape)

        return hook

    def force_pattern(recorded: torch.Tensor) -> Hook:
        forced = recorded.unsqueeze(0).expand(n, *recorded.shape).reshape(n * batch, *recorded.shape[1:])

        def hook(pattern: torch.Tensor, hook: HookPoint) -> torch.Tensor:
            return forced.to(pattern.dtype)

        return hook

    with torch.inference_mode():
        means = replacement_outputs(model, tokens, replacement)
        hooks = [
            (f"blocks.{layer}.attn.hook_z", remove_heads(layer, means[layer]))
            for layer in range(cfg.n_layers)
            if (keep[:, layer] == 0).any()
        ]
        if kind == "pattern-preserving":
            hooks += [
                (f"blocks.{layer}.attn.hook_pattern", force_pattern(p))
                for layer, p in enumerate(recorded_patterns(model, tokens))
            ]
        with model.hooks(fwd_hooks=hooks):  # removed on exit, also when the forward pass raises
            logits = model(tokens.repeat(n, 1))
    return logits.view(n, batch, seq, -1)


def ablated_losses(
    model: TransformerBridge,
    tokens: torch.Tensor,
    ablations: Sequence[Iterable[Head]],
    kind: Kind = "full",
    max_rows: int = 4096,
    replacement: Replacement = "zero",
) -> torch.Tensor:
    """Per-token loss with each set of heads in ``ablations`` removed.

    Runs :func:`ablated_logits` on as many ablations at once as fit in ``max_rows`` sequences per pass
    (``replacement``: what the removed heads' output becomes, as there).

    Returns:
        ``(n_ablations, batch, seq - 1)``, the convention of :func:`lib.induction.scores.per_token_loss`.
    """
    validate.token_batch(tokens)
    validate.positive_int("max_rows", max_rows)
    sets = [list(heads) for heads in ablations]
    if not sets:
        raise ValueError(_NO_ABLATIONS)
    per_pass = max(1, max_rows // tokens.shape[0])
    with torch.inference_mode():
        chunks = [
            next_token_loss(ablated_logits(model, tokens, sets[i : i + per_pass], kind, replacement), tokens)
            for i in range(0, len(sets), per_pass)
        ]
    return torch.cat(chunks)


def ablated_loss(
    model: TransformerBridge,
    tokens: torch.Tensor,
    heads: Iterable[Head] = (),
    kind: Kind = "full",
    replacement: Replacement = "zero",
) -> torch.Tensor:
    """Per-token loss with ``heads`` removed together; ``heads=()`` gives the clean loss.

    Returns:
        ``(batch, seq - 1)``.
    """
    return ablated_losses(model, tokens, [list(heads)], kind, replacement=replacement)[0]


def each_head(model: TransformerBridge) -> list[list[Head]]:
    """The ablations "nothing removed", then every head alone: ``[[], [(0, 0)], [(0, 1)], ...]``."""
    return [[]] + [[head] for head in all_heads(model)]


def fraction_removed(clean: torch.Tensor | float, ablated: torch.Tensor | float) -> torch.Tensor:
    """Share of a score that an ablation removes: ``1 - ablated / clean``.

    ``1`` = all of it gone, ``0`` = unchanged, negative = the ablation increased it; for the ICL score
    (negative = in-context learning), ``1`` means no in-context learning is left.
    """
    clean, ablated = torch.as_tensor(clean), torch.as_tensor(ablated)
    if (clean == 0).any():
        raise ValueError("the clean score is 0: a fraction of it is undefined")
    return 1 - ablated / clean


def head_path_logits(model: TransformerBridge, tokens: torch.Tensor, head: Head) -> torch.Tensor:
    """The sum of every logit term that contains ``head``, with attention patterns frozen to the clean run.

    Without LayerNorm the residual stream is a sum, and with patterns held fixed every head is linear in
    its input. So the head's output ``z W_O`` reaches the logits along its direct path (``W_U``) and through
    the values of every later head: ``A' (x W_V' W_O')``, recursively. This adds up all of those paths
    (value biases belong to other terms and are left out).

    Returns:
        ``(batch, seq, vocab)``: clean logits minus this equals the pattern-preserving ablation of ``head``.
    """
    validate.token_batch(tokens)
    ((layer, h),) = check_heads(model, [head])
    n_layers = model.cfg.n_layers
    later_layers = range(layer + 1, n_layers)
    names = [f"blocks.{layer}.attn.hook_z"] + [f"blocks.{l}.attn.hook_pattern" for l in later_layers]
    with torch.inference_mode():
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
        W_V, W_O = model.W_V, model.W_O  # (layers, heads, d_model, d_head), (layers, heads, d_head, d_model)
        carried = cache[names[0]][:, :, h] @ W_O[layer, h]  # (batch, seq, d_model): what the head writes
        for later in later_layers:
            pattern = cache[f"blocks.{later}.attn.hook_pattern"]  # (batch, heads, query, key)
            values = torch.einsum("bkd,hde,hef->bhkf", carried, W_V[later], W_O[later])
            carried = carried + torch.einsum("bhqk,bhkf->bqf", pattern, values)
        return carried @ model.W_U


def key_path_cut_losses(
    model: TransformerBridge,
    tokens: torch.Tensor,
    sources: Iterable[Head],
    targets: Iterable[Head],
    replacement: Replacement = "zero",
) -> torch.Tensor:
    """Per-token loss with one head's output removed from the *keys of one later head only*, for every pair.

    For a source head ``s`` and a target head ``t`` of a later layer, ``t``'s keys are computed from the residual
    stream minus what ``s`` wrote into it directly (``z_s W_O^s``, replaced as ``replacement`` says: zero, its mean
    over the batch, or its value on another sequence; see :data:`REPLACEMENTS`). Everything else, ``t``'s queries and
    values and every other head, sees the intact stream. This is the causal test of K-composition one edge at a
    time: cutting a previous-token head from an induction head's keys should break induction, cutting another head
    should not.

    Args:
        tokens: ``(batch, seq) int64``.
        sources, targets: heads; every target's layer must come after every source's.

    Returns:
        ``(n_sources, n_targets, batch, seq - 1)``, computed under ``torch.inference_mode``.
    """
    validate.token_batch(tokens)
    validate.one_of("replacement", replacement, REPLACEMENTS)
    source_heads, target_heads = check_heads(model, sources), check_heads(model, targets)
    if not source_heads or not target_heads:
        raise ValueError("sources and targets must each name at least one head")
    if max(layer for layer, _ in source_heads) >= min(layer for layer, _ in target_heads):
        raise ValueError(
            f"every target must sit in a later layer than every source, got sources {source_heads} "
            f"and targets {target_heads}"
        )
    n, batch = len(target_heads), tokens.shape[0]
    with torch.inference_mode():
        source_layers = sorted({layer for layer, _ in source_heads})
        z = dict(zip(source_layers, _record_layers(model, tokens, source_layers)))  # (batch, seq, heads, d_head)
        losses = []
        for layer, head in source_heads:
            written = z[layer][:, :, head] @ model.W_O[layer, head]  # (batch, seq, d_model)
            if replacement == "mean":
                written = written - written.mean(dim=0)
            elif replacement == "resample":
                if batch < 2:
                    raise ValueError(f"resampling needs a batch of at least 2 sequences, got {batch}")
                written = written - written.roll(-1, dims=0)
            hooks = []
            for target_layer in sorted({layer for layer, _ in target_heads}):
                hooks.append(
                    (f"blocks.{target_layer}.attn.hook_k", _cut_keys(model, written, target_heads, target_layer))
                )
            with model.hooks(fwd_hooks=hooks):
                logits = model(tokens.repeat(n, 1))
            losses.append(next_token_loss(logits.view(n, batch, *logits.shape[1:]), tokens))
    return torch.stack(losses)


def _cut_keys(model: TransformerBridge, written: torch.Tensor, targets: Sequence[Head], layer: int) -> Hook:
    """A ``hook_k`` hook of ``layer``: copy ``i`` of the repeated batch loses ``written`` from target ``i``'s keys."""
    n = len(targets)
    batch = written.shape[0]

    def hook(k: torch.Tensor, hook: HookPoint) -> torch.Tensor:  # k: (n * batch, seq, heads, d_head)
        k = k.clone().view(n, batch, *k.shape[1:])
        for i, (target_layer, head) in enumerate(targets):
            if target_layer == layer:
                k[i, :, :, head] -= (written @ model.W_K[layer, head]).to(k.dtype)
        return k.view(n * batch, *k.shape[2:])

    return hook
