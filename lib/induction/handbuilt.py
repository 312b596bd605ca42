"""A two-layer induction circuit whose weights are set in code (chapter 5): a previous-token
head in layer 0 and an induction head in layer 1 that reads it by K-composition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from lib.core import validate
from lib.core.tokens import BOS
from lib.induction.models import make_model
from lib.induction.sequences import InductionConfig

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


@dataclass(frozen=True)
class HandBuiltLayout:
    """Where each piece of information lives in the hand-built model's residual stream.

    The residual stream is cut into four blocks of one-hot slots:
    ``token`` (which token sits here), ``previous`` (which token sat one position earlier; written by
    the layer-0 head), ``output`` (the token the layer-1 head copied; read by the unembedding) and
    ``position`` (which position this is).
    """

    vocab: int
    seq_len: int

    @property
    def token(self) -> slice:
        return slice(0, self.vocab)

    @property
    def previous(self) -> slice:
        return slice(self.vocab, 2 * self.vocab)

    @property
    def output(self) -> slice:
        return slice(2 * self.vocab, 3 * self.vocab)

    @property
    def position(self) -> slice:
        return slice(3 * self.vocab, 3 * self.vocab + self.seq_len)

    @property
    def d_model(self) -> int:
        return 3 * self.vocab + self.seq_len

    @property
    def d_head(self) -> int:
        return max(self.vocab, self.seq_len)


def hand_built_config(vocab: int = 32, seq_len: int = 45) -> InductionConfig:
    """The :class:`InductionConfig` of the hand-built model: 2 layers of 1 head, wide enough for one-hot slots."""
    layout = HandBuiltLayout(vocab, seq_len)
    return InductionConfig(
        n_layers=2,
        n_heads=1,
        d_model=layout.d_model,
        d_head=layout.d_head,
        vocab=vocab,
        seq_len=seq_len,
        min_repeat=min(5, (seq_len - 1) // 2),
        max_repeat=(seq_len - 1) // 2,
        prefix_segment=min(12, (seq_len - 1) // 4, vocab - 1),
    )


def set_head(
    model: TransformerBridge,
    layer: int,
    head: int,
    *,
    W_Q: torch.Tensor | None = None,
    b_Q: torch.Tensor | None = None,
    W_K: torch.Tensor | None = None,
    b_K: torch.Tensor | None = None,
    W_V: torch.Tensor | None = None,
    W_O: torch.Tensor | None = None,
) -> None:
    """Overwrite one head's weights, given in transformer_lens' orientation.

    Args:
        W_Q, W_K, W_V: ``(d_model, d_head)``: a query is ``resid @ W_Q + b_Q``.
        b_Q, b_K: ``(d_head,)``.
        W_O: ``(d_head, d_model)``: the head writes ``z @ W_O`` into the residual stream.
    """
    validate.index("layer", layer, model.cfg.n_layers)
    validate.index("head", head, model.cfg.n_heads)
    d_head = model.cfg.d_head
    rows = slice(head * d_head, (head + 1) * d_head)
    attn = model.blocks[layer].attn
    with torch.no_grad():
        for name, weight, bias in (("q", W_Q, b_Q), ("k", W_K, b_K), ("v", W_V, None)):
            linear = getattr(attn, name)
            if weight is not None:
                linear.weight[rows] = weight.T.to(linear.weight)
            if bias is not None:
                linear.bias[rows] = bias.to(linear.bias)
        if W_O is not None:
            attn.o.weight[:, rows] = W_O.T.to(attn.o.weight)


def embedding_weights(layout: HandBuiltLayout, strength: float = 20.0) -> dict[str, torch.Tensor]:
    """Embeddings and unembedding of the hand-built model.

    Returns:
        ``W_E (vocab, d_model)``: token ``t`` -> one-hot in the ``token`` slot;
        ``W_pos (seq_len, d_model)``: position ``i`` -> one-hot in the ``position`` slot;
        ``W_U (d_model, vocab)``: the ``output`` slot of token ``t`` -> logit ``strength / 2`` for ``t``.
    """
    v, n, d = layout.vocab, layout.seq_len, layout.d_model
    tok, pos = torch.arange(v), torch.arange(n)
    W_E = torch.zeros(v, d)
    W_E[tok, layout.token.start + tok] = 1.0
    W_pos = torch.zeros(n, d)
    W_pos[pos, layout.position.start + pos] = 1.0
    W_U = torch.zeros(d, v)
    W_U[layout.output.start + tok, tok] = strength / 2
    return {"W_E": W_E, "W_pos": W_pos, "W_U": W_U}


def previous_token_head_weights(layout: HandBuiltLayout, strength: float = 20.0) -> dict[str, torch.Tensor]:
    """Layer 0's previous-token head, which works through the positional embeddings alone.

    Returns:
        ``W_Q (d_model, d_head)``: the ``position`` slot of ``i`` -> head dimension ``i``, times
        ``strength * sqrt(d_head)`` (attention scores are divided by ``sqrt(d_head)``);
        ``W_K (d_model, d_head)``: the ``position`` slot of ``j`` -> head dimension ``j + 1``, so query
        ``i`` meets key ``j`` exactly when ``j == i - 1`` (score ``strength``, 0 elsewhere);
        ``W_V (d_model, d_head)``: the ``token`` slot of ``t`` -> head dimension ``t``;
        ``W_O (d_head, d_model)``: head dimension ``t`` -> the ``previous`` slot of ``t``.
    """
    v, n, d, dh = layout.vocab, layout.seq_len, layout.d_model, layout.d_head
    tok, pos = torch.arange(v), torch.arange(n)
    W_Q = torch.zeros(d, dh)
    W_Q[layout.position.start + pos, pos] = strength * math.sqrt(dh)
    W_K = torch.zeros(d, dh)
    W_K[layout.position.start + pos[:-1], pos[1:]] = 1.0
    W_V = torch.zeros(d, dh)
    W_V[layout.token.start + tok, tok] = 1.0
    W_O = torch.zeros(dh, d)
    W_O[tok, layout.previous.start + tok] = 1.0
    return {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}


def induction_head_weights(
    layout: HandBuiltLayout,
    strength: float = 20.0,
) -> dict[str, torch.Tensor]:
    """Layer 1's induction head: K-composition and a copying OV circuit.

    Its keys read what the previous-token head of layer 0 wrote.

    Returns:
        ``W_Q``: the ``token`` slot of the current token ``A`` -> head
        dimension ``A`` (times ``strength * sqrt(d_head)``), plus a bias
        ``b_Q`` on dimension 0 for every query;
        ``W_K``: the ``previous`` slot of ``A`` -> dimension ``A``: key
        ``j`` matches when the token *before* ``j`` was ``A`` (score
        ``strength``); BOS as a predecessor matches nothing; the
        ``position`` slot of 0 (the BOS token) -> dimension 0 at one half,
        so BOS scores ``strength / 2`` for every query: where ``A`` was not
        seen before, the head rests on BOS;
        ``W_V``: the ``token`` slot of ``B`` -> dimension ``B`` for every
        content token (BOS carries nothing);
        ``W_O``: dimension ``B`` -> the ``output`` slot of ``B``, which the
        unembedding turns into a vote for ``B``.
    """
    v, d, dh = layout.vocab, layout.d_model, layout.d_head
    # content tokens; dimension 0 is BOS's, the resting place
    tok = torch.arange(1, v)
    scale = strength * math.sqrt(dh)
    W_Q = torch.zeros(d, dh)
    W_Q[layout.token.start + tok, tok] = scale
    b_Q = torch.zeros(dh)
    b_Q[BOS] = scale
    W_K = torch.zeros(d, dh)
    W_K[layout.previous.start + tok, tok] = 1.0
    W_K[layout.position.start + 0, BOS] = 0.5
    W_V = torch.zeros(d, dh)
    W_V[layout.token.start + tok, tok] = 1.0
    W_O = torch.zeros(dh, d)
    W_O[tok, layout.output.start + tok] = 1.0
    return {"W_Q": W_Q, "b_Q": b_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}


def blank_model(
    config: InductionConfig, layout: HandBuiltLayout, strength: float, device: torch.device | str | None = None
) -> TransformerBridge:
    """A model of ``config`` whose weights are all zero but the embeddings and unembedding of
    :func:`embedding_weights`: the canvas on which the hand-built heads are set (:func:`set_head`)."""
    model = make_model(config, seed=0, device=device)
    embed = embedding_weights(layout, strength)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        native = model.original_model
        native.get_parameter("tok_embed.weight").copy_(embed["W_E"])
        native.get_parameter("pos.weight").copy_(embed["W_pos"])
        native.get_parameter("head.weight").copy_(embed["W_U"].T)
    return model


def hand_built_model(
    vocab: int = 32, seq_len: int = 45, strength: float = 20.0, device: torch.device | str | None = None
) -> TransformerBridge:
    """A two-layer attention-only model (one head per layer) whose weights implement an induction circuit.

    Every weight is zero except those set by :func:`embedding_weights`,
    :func:`previous_token_head_weights` (layer 0) and :func:`induction_head_weights` (layer 1).
    ``strength`` is the attention score of a match before the softmax (larger = sharper attention).
    """
    if not strength > 0:
        raise ValueError(f"strength must be positive, got {strength!r}")
    layout = HandBuiltLayout(vocab, seq_len)
    model = blank_model(hand_built_config(vocab, seq_len), layout, strength, device)
    set_head(model, 0, 0, **previous_token_head_weights(layout, strength))
    set_head(model, 1, 0, **induction_head_weights(layout, strength))
    return model
