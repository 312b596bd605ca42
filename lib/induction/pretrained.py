"""Chapter 5's head scores on a pretrained Hugging Face model with GPT-2's interface (chapter 10's online section).

A Hugging Face causal LM returns every layer's attention when called with ``output_attentions=True``;
:func:`attention_patterns` stacks them in :func:`lib.induction.scores.attention_patterns`'s convention,
``(n_layers, batch, n_heads, query, key)``, so :func:`lib.induction.scores.prefix_matching_score` and
:func:`~lib.induction.scores.previous_token_score` apply unchanged. The data (:func:`repeat_batches`): a BOS-like
first token, ``n`` distinct random tokens from a middle band of the vocabulary, then the same ``n`` again; and, as the
control, the same first ``n`` followed by ``n`` other distinct tokens, which repeat nothing.

:func:`head_scores` scores every head. Prefix matching is read on the repeated tokens and, as the control, on the
fresh ones with the repeated tokens' mask: where a repeat *would* put the answer. A head that attends a fixed
distance back scores the same on both; an induction head scores high only where the tokens repeat.

:func:`gpt2_copying_score` is chapter 5's copying score for a GPT-2 model, read off the weights with its LayerNorms
approximated (see there). Nothing here downloads: chapter 10 loads GPT-2 small with
:func:`lib.ocr.lm.load_if_enabled`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lib.core import validate
from lib.core.train import model_device
from lib.induction import scores, sequences

GPT2 = "gpt2"
"""GPT-2 small on the hub: 12 layers of 12 heads, 124 M parameters."""

GPT2_DOWNLOAD_GB = 0.55
"""Its download: ``model.safetensors`` (548 MB) and about 3 MB of tokenizer files (chapter 4 reads the same)."""

TOKEN_BAND = (1_000, 20_000)
"""GPT-2's token ids the random tokens are drawn from: its byte-pair merges come roughly in order of frequency, so
this skips the bytes and the most common pieces at the start and the rare ones at the end."""


def repeat_batches(
    batch: int, n: int, generator: torch.Generator, bos: int, band: tuple[int, int] = TOKEN_BAND
) -> tuple[torch.Tensor, torch.Tensor]:
    """Repeated random tokens and their non-repeating control, drawn on ``generator``'s device (the CPU's).

    Per row, ``2 n`` distinct tokens ``a, b`` from ``band`` (``low <= id < high``); the repeated row is
    ``bos, a, a`` and the control ``bos, a, b``.

    Returns:
        ``(repeated, fresh)``, both ``(batch, 1 + 2 n) int64``.
    """
    validate.positive_int("batch", batch)
    validate.int_at_least("n", n, 2, "a repeat of at least two tokens")
    low, high = band
    if not (isinstance(low, int) and isinstance(high, int) and 0 <= low and high - low >= 2 * n):
        raise ValueError(f"band must be (low, high) ids with 0 <= low and at least 2 n = {2 * n} ids, got {band!r}")
    validate.int_at_least("bos", bos, 0)
    drawn = sequences.distinct_tokens(batch, 2 * n, low, high, generator)  # (batch, 2 n)
    first = torch.full((batch, 1), bos, dtype=torch.int64, device=generator.device)
    a, b = drawn[:, :n], drawn[:, n:]
    return torch.cat([first, a, a], dim=1), torch.cat([first, a, b], dim=1)


def attention_patterns(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Every head's attention pattern, from a Hugging Face model called with ``output_attentions=True``.

    A model that can switch its attention implementation is switched to ``"eager"`` first (PyTorch's fused
    attention returns no pattern). ``tokens`` are moved to the model's device.

    Args:
        tokens: ``(batch, seq) int64`` ids below the model's ``config.vocab_size``.

    Returns:
        ``(n_layers, batch, n_heads, query, key)`` on the model's device; rows sum to 1 over the keys.
    """
    config = getattr(model, "config", None)
    vocab = getattr(config, "vocab_size", None)
    if not isinstance(vocab, int):
        raise ValueError(f"model must be a Hugging Face model with config.vocab_size, got {type(model).__name__}")
    validate.token_range(validate.token_batch(tokens), vocab)
    if getattr(config, "_attn_implementation", "eager") != "eager" and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")  # type: ignore[operator]
    with torch.inference_mode():
        out = model(input_ids=tokens.to(model_device(model)), output_attentions=True, use_cache=False)
    attentions = getattr(out, "attentions", None)
    if not attentions:
        raise ValueError(f"{type(model).__name__} returned no attention patterns for output_attentions=True")
    return torch.stack(attentions)


def gpt2_copying_score(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Chapter 5's copying score (:func:`lib.induction.scores.copying_of_logits`) for every head of a GPT-2 model.

    Approximate, as GPT-2's LayerNorms make it: each head reads token ``t`` as its bare embedding ``W_E[t]``
    normalised by the head's layer's ``ln_1`` (centred, divided by its standard deviation, times the gain), with no
    position embedding and nothing earlier layers wrote; its output ``W_V W_O`` reaches the logits through
    ``ln_f`` as centring times the gain (``ln_f``'s division by the residual's norm is one positive factor a
    position, which the score, divided by its largest logit, does not see); biases are left out as in chapter 5.

    Args:
        model: a ``GPT2LMHeadModel`` (``transformer.h[i].ln_1``, ``.attn.c_attn``, ``.attn.c_proj``, ``ln_f``).
        tokens: ``(n,) int64`` token ids.

    Returns:
        ``(n_layers, n_heads)`` in ``[-1, 1]``, on the CPU.
    """
    if getattr(getattr(model, "config", None), "model_type", None) != "gpt2":
        raise ValueError(f"model must be a GPT-2 model (config.model_type 'gpt2'), got {type(model).__name__}")
    gpt2: Any = model  # transformers' modules, typed loosely
    body = gpt2.transformer
    embed: torch.Tensor = body.wte.weight
    unembed: torch.Tensor = gpt2.lm_head.weight
    validate.token_range(validate.token_ids(tokens, ("n",)), embed.shape[0])
    n_heads: int = gpt2.config.n_head
    d_model = embed.shape[1]
    d_head = d_model // n_heads
    rows = []
    with torch.inference_mode():
        x = embed[tokens.to(embed.device)]  # (n, d_model)
        for block in body.h:
            read = F.layer_norm(x, (d_model,), block.ln_1.weight, None, block.ln_1.eps)
            w_v = block.attn.c_attn.weight[:, 2 * d_model :].view(d_model, n_heads, d_head)  # GPT-2's Conv1D: x @ W
            w_o = block.attn.c_proj.weight.view(n_heads, d_head, d_model)
            out = torch.einsum("nd,dhe,hef->hnf", read, w_v, w_o)  # (heads, n, d_model)
            out = (out - out.mean(dim=-1, keepdim=True)) * body.ln_f.weight
            rows.append(scores.copying_of_logits(out @ unembed.T, tokens.to(embed.device)))
    return torch.stack(rows).cpu()


def head_scores(model: nn.Module, repeated: torch.Tensor, fresh: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every head's prefix matching on repeated tokens, the same on the control, and its previous-token score.

    Args:
        repeated: ``(batch, seq) int64`` rows that repeat their tokens (e.g. :func:`repeat_batches`).
        fresh: ``(batch, seq) int64``, the control: no token repeats within a row after the first.

    Returns:
        ``{"prefix matching", "prefix matching, fresh tokens", "previous token"}`` -> ``(n_layers, n_heads)`` on the
        CPU; the control is the fresh tokens' attention at the keys the repeated tokens' mask selects, and the
        previous-token score is read on the fresh tokens (where no repeat competes for the attention).
    """
    validate.token_batch(repeated, "repeated")
    validate.token_batch(fresh, "fresh")
    if repeated.shape != fresh.shape:
        raise ValueError(f"repeated {tuple(repeated.shape)} and fresh {tuple(fresh.shape)} must have one shape")
    if scores.prefix_matching_mask(fresh[:, 1:]).any():
        raise ValueError("fresh must not repeat a token within a row (after its first): it is the no-repeat control")
    on_repeated = attention_patterns(model, repeated)
    on_fresh = attention_patterns(model, fresh)
    repeated = repeated.to(on_repeated.device)
    return {
        "prefix matching": scores.prefix_matching_score(on_repeated, repeated).cpu(),
        "prefix matching, fresh tokens": scores.prefix_matching_score(on_fresh, repeated).cpu(),
        "previous token": scores.previous_token_score(on_fresh).cpu(),
    }
