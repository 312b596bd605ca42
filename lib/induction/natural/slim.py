"""A slim attention-only transformer for the natural-text runs of issue 29, with the options the
``TransformerBridge`` cannot express: **shortformer positions** (Press et al. 2021: learned positions added to the
queries' and keys' input of every layer, never to the residual stream, so layer 0 writes pure token identity into
the keys of layer 1), pre-LayerNorm on or off, and any ``d_head``.

It is a transformer_lens ``HookedRootModule`` with the chapter-5 hook names and weight views that
:mod:`lib.induction.scores`, :mod:`lib.induction.ablation` and :mod:`lib.induction.natural.edits` use:
``hook_embed``, ``hook_pos_embed``, ``blocks.{l}.hook_resid_pre``, ``blocks.{l}.attn.hook_q`` / ``hook_k`` /
``hook_v`` / ``hook_z`` ``(batch, seq, heads, d_head)``, ``blocks.{l}.attn.hook_attn_scores`` / ``hook_pattern``
``(batch, heads, query, key)``, ``blocks.{l}.hook_attn_out`` and ``hook_resid_post`` ``(batch, seq, d_model)``;
``W_E (vocab, d_model)``, ``W_pos (n_ctx, d_model)``, ``W_Q, W_K, W_V (n_layers, heads, d_model, d_head)``,
``W_O (n_layers, heads, d_head, d_model)``, their biases, ``W_U (d_model, vocab)``, ``b_U``; ``cfg`` with
``n_layers, n_heads, d_model, d_head, n_ctx, d_vocab``. With standard positions and no LayerNorm it computes what
the bridge computes (:func:`from_bridge` copies a bridge model; ``tests/induction/test_natural_slim.py`` checks
logits and patterns). With shortformer positions, :func:`lib.induction.circuits.run_with_qk_from_embeddings` (which
rebuilds keys from ``hook_resid_pre`` of layer 0) misses the positions the keys also read.

Initialisation follows the bridge's (transformer_lens' "gpt2" scheme): every weight ``N(0, (0.8 / sqrt(d_model))^2)``,
output projections ``W_O`` scaled by ``1 / sqrt(2 n_layers)``, biases 0, LayerNorm weights 1. The numbers differ from
a bridge of the same seed (another draw order). transformer_lens is imported with this module (about 5 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast, get_args

import torch
import torch.nn.functional as F
from torch import nn
from transformer_lens.hook_points import HookPoint
from transformer_lens.HookedRootModule import HookedRootModule

from lib.core import seeds, validate

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

Positions = Literal["standard", "shortformer"]

POSITIONS: tuple[Positions, ...] = get_args(Positions)
"""``"standard"``: learned positions added to the residual stream (GPT-2, the bridge); ``"shortformer"``: added to
the queries' and keys' input of every layer only."""


@dataclass(frozen=True)
class SlimConfig:
    """The shape of a :class:`SlimModel` (the attribute names transformer_lens' ``cfg`` uses).

    Attributes:
        positions: one of :data:`POSITIONS`.
        layer_norm: LayerNorm (weight and bias) before each attention layer and before the unembedding.
        init_std: ``None``: ``0.8 / sqrt(d_model)``, the bridge's default.
    """

    n_layers: int = 2
    n_heads: int = 8
    d_model: int = 128
    d_head: int = 16
    n_ctx: int = 256
    d_vocab: int = 1024
    positions: Positions = "standard"
    layer_norm: bool = False
    init_std: float | None = None

    def __post_init__(self) -> None:
        for name in ("n_layers", "n_heads", "d_model", "d_head", "n_ctx", "d_vocab"):
            validate.positive_int(name, getattr(self, name))
        validate.one_of("positions", self.positions, POSITIONS)
        if self.init_std is not None and not self.init_std > 0:
            raise ValueError(f"init_std must be positive or None, got {self.init_std!r}")

    @property
    def std(self) -> float:
        return self.init_std if self.init_std is not None else 0.8 / math.sqrt(self.d_model)


class SlimAttention(nn.Module):
    """One layer's heads: ``(batch, seq, d_model)`` values input and query/key input -> the layer's output."""

    mask: torch.Tensor

    def __init__(self, cfg: SlimConfig) -> None:
        super().__init__()
        h, d, e = cfg.n_heads, cfg.d_model, cfg.d_head
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.empty(h, d, e)) for _ in range(3))
        self.W_O = nn.Parameter(torch.empty(h, e, d))
        self.b_Q, self.b_K, self.b_V = (nn.Parameter(torch.zeros(h, e)) for _ in range(3))
        self.b_O = nn.Parameter(torch.zeros(d))
        self.register_buffer("mask", torch.ones(cfg.n_ctx, cfg.n_ctx, dtype=torch.bool).tril(), persistent=False)
        self.scale = math.sqrt(e)
        self.hook_q, self.hook_k, self.hook_v = HookPoint(), HookPoint(), HookPoint()
        self.hook_attn_scores, self.hook_pattern, self.hook_z = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor, qk_input: torch.Tensor) -> torch.Tensor:
        q = self.hook_q(torch.einsum("bsd,hde->bshe", qk_input, self.W_Q) + self.b_Q)
        k = self.hook_k(torch.einsum("bsd,hde->bshe", qk_input, self.W_K) + self.b_K)
        v = self.hook_v(torch.einsum("bsd,hde->bshe", x, self.W_V) + self.b_V)
        seq = x.shape[1]
        scores = torch.einsum("bqhe,bkhe->bhqk", q, k) / self.scale
        scores = self.hook_attn_scores(scores.masked_fill(~self.mask[:seq, :seq], float("-inf")))
        pattern = self.hook_pattern(F.softmax(scores, dim=-1))
        z = self.hook_z(torch.einsum("bhqk,bkhe->bqhe", pattern, v))
        return torch.einsum("bqhe,hed->bqd", z, self.W_O) + self.b_O


class SlimBlock(nn.Module):
    """Residual stream ``x`` -> ``x`` + the attention layer's output (pre-LayerNorm when configured)."""

    attn: SlimAttention

    def __init__(self, cfg: SlimConfig) -> None:
        super().__init__()
        self.ln1: nn.Module = nn.LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
        self.attn = SlimAttention(cfg)
        self.shortformer = cfg.positions == "shortformer"
        self.hook_resid_pre, self.hook_attn_out, self.hook_resid_post = HookPoint(), HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        h = self.ln1(x)
        out = self.hook_attn_out(self.attn(h, h + pos if self.shortformer else h))
        return self.hook_resid_post(x + out)


class SlimModel(HookedRootModule):
    """``(batch, seq) int64`` tokens -> ``(batch, seq, d_vocab)`` logits (see the module docstring)."""

    def __init__(self, cfg: SlimConfig, seed: int = seeds.seed(0)) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Parameter(torch.empty(cfg.d_vocab, cfg.d_model))
        self.pos_embed = nn.Parameter(torch.empty(cfg.n_ctx, cfg.d_model))
        self.blocks = nn.ModuleList(SlimBlock(cfg) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model) if cfg.layer_norm else nn.Identity()
        self.unembed = nn.Parameter(torch.empty(cfg.d_model, cfg.d_vocab))
        self.b_U = nn.Parameter(torch.zeros(cfg.d_vocab))
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()
        g = torch.Generator().manual_seed(validate.seed(seed))
        for weight in (self.embed, self.pos_embed, self.unembed):
            nn.init.normal_(weight, std=cfg.std, generator=g)
        for attn in self.attention_layers():
            for weight in (attn.W_Q, attn.W_K, attn.W_V):
                nn.init.normal_(weight, std=cfg.std, generator=g)
            nn.init.normal_(attn.W_O, std=cfg.std / math.sqrt(2 * cfg.n_layers), generator=g)
        self.setup()

    def attention_layers(self) -> list[SlimAttention]:
        """Each layer's :class:`SlimAttention`."""
        return [cast(SlimBlock, block).attn for block in self.blocks]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        validate.token_batch(tokens)
        seq = tokens.shape[1]
        if seq > self.cfg.n_ctx:
            raise ValueError(f"tokens have {seq} positions, more than the model's n_ctx {self.cfg.n_ctx}")
        x = self.hook_embed(self.embed[tokens])  # (batch, seq, d_model)
        pos = self.hook_pos_embed(self.pos_embed[:seq].expand_as(x))
        if self.cfg.positions == "standard":
            x = x + pos
        for block in self.blocks:
            x = block(x, pos)
        return self.ln_final(x) @ self.unembed + self.b_U

    def _stacked(self, name: str) -> torch.Tensor:
        return torch.stack([getattr(attn, name) for attn in self.attention_layers()])

    @property
    def W_E(self) -> torch.Tensor:
        return self.embed

    @property
    def W_pos(self) -> torch.Tensor:
        return self.pos_embed

    @property
    def W_U(self) -> torch.Tensor:
        return self.unembed

    @property
    def W_Q(self) -> torch.Tensor:
        return self._stacked("W_Q")

    @property
    def W_K(self) -> torch.Tensor:
        return self._stacked("W_K")

    @property
    def W_V(self) -> torch.Tensor:
        return self._stacked("W_V")

    @property
    def W_O(self) -> torch.Tensor:
        return self._stacked("W_O")

    @property
    def b_Q(self) -> torch.Tensor:
        return self._stacked("b_Q")

    @property
    def b_K(self) -> torch.Tensor:
        return self._stacked("b_K")

    @property
    def b_V(self) -> torch.Tensor:
        return self._stacked("b_V")

    @property
    def b_O(self) -> torch.Tensor:
        return self._stacked("b_O")


def from_bridge(model: TransformerBridge) -> SlimModel:
    """A :class:`SlimModel` (standard positions) holding the weights of an attention-only ``TransformerBridge`` of
    :func:`lib.induction.natural.runs.make_model` (no smeared keys), on the CPU."""
    cfg = model.cfg
    if not getattr(cfg, "attn_only", False) or getattr(cfg, "positional_embedding_type", "standard") != "standard":
        raise ValueError("from_bridge needs an attention-only bridge with standard positions")
    layer_norm = cfg.normalization_type == "LN"
    slim = SlimModel(
        SlimConfig(cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_head, cfg.n_ctx, cfg.d_vocab, layer_norm=layer_norm)
    )
    native = model.original_model.state_dict()
    state = {"embed": model.W_E, "pos_embed": model.W_pos, "unembed": model.W_U, "b_U": model.b_U}
    for layer in range(cfg.n_layers):
        for name in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"):
            state[f"blocks.{layer}.attn.{name}"] = getattr(model, name)[layer]
        if layer_norm:
            for name in ("weight", "bias"):
                state[f"blocks.{layer}.ln1.{name}"] = native[f"layers.{layer}.ln1._original_component.{name}"]
    if layer_norm:
        for name in ("weight", "bias"):
            state[f"ln_final.{name}"] = native[f"ln_out._original_component.{name}"]
    slim.load_state_dict({k: v.detach().cpu() for k, v in state.items()})  # strict: every weight given
    return slim
