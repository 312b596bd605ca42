"""The one-layer, one-head, attention-only model of the OCR chapters (Huang et al. 2025, section 3).

Tokens are one-hot vectors ``e_z`` of size ``d`` (``X = [e_{z_1} ... e_{z_T}]^T``, shape ``(T, d)``), the
attention is linear (no softmax) and the prediction is read at the last position (the EOS token):

- factorized: ``f(X) = W_O W_V^T X^T X W_KQ x_T``, with ``W_O, W_V`` of shape ``(d, r)``;
- merged:     ``f(X) = W_OV X^T X W_KQ x_T``,     with ``W_OV`` of shape ``(d, d)``.

``X W_KQ x_T`` is the vector of attention scores ``W_KQ[z_t, z_T]``, and ``X^T`` adds them up per token:
``X^T X W_KQ x_T`` is an attention-weighted bag of tokens of size ``d``. The code builds that bag with a
scatter instead of one-hot matrices, then applies the (factorized or merged) output-value map.

Several independently initialised copies ("seeds", or "members") live in one module: every parameter
has a leading member dimension ``S`` and the loss is a vector with one entry per member, which
:func:`lib.core.train.train` sums for one backward pass. With AdamW each member trains exactly as it would
alone (the optimizer is element-wise and the members share no parameter). A member may also have its
own rank (the factorized map of member ``i`` uses only its first ``rank[i]`` columns), which turns a
rank sweep into a single batched run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lib.core import seeds, validate
from lib.core.train import TrainConfig

Parameterization = Literal["factorized", "merged"]
"""``"factorized"``: ``W_O W_V^T``; ``"merged"``: one matrix ``W_OV``."""

PARAMETERIZATIONS: tuple[Parameterization, ...] = get_args(Parameterization)

Attention = Literal["linear", "softmax"]
"""``"linear"``: the raw scores ``W_KQ[z_t, z_T]`` (the paper's); ``"softmax"``: their softmax over positions."""

ATTENTIONS: tuple[Attention, ...] = get_args(Attention)

ValueInit = Literal["gaussian", "identity"]
"""Start of the factorized ``W_V``: ``"gaussian"`` (like every other matrix) or ``"identity"`` (``init_scale`` times the
first ``r`` columns of the identity: only the ``W_V`` part of the official main script's ``weight_init='identity'``,
which also sets ``W_Q`` and ``W_O`` to 1e-4 times all-ones, and whose merged arm (``--reparameterize_ov``) trains
``W_OV`` with ``W_V = I`` frozen; neither of those is reproduced here)."""

VALUE_INITS: tuple[ValueInit, ...] = get_args(ValueInit)

Batch = tuple[Tensor, Tensor]
"""``(tokens, answers)``: tokens ``(B, T)`` or ``(S, B, T)`` int64, answers ``(B,)`` or ``(S, B)`` int64."""

Sampler = Callable[[int, torch.Generator], Batch]
"""``(batch_size, generator) -> batch``, the ``make_batch`` of :func:`lib.core.train.train`."""

TRAINING = TrainConfig(steps=2000, lr=5e-3, batch_size=252, weight_decay=0.03, optimizer="adamw", desc="one-layer OCR")
"""The official main script's training settings: 2000 AdamW steps, batch 252, lr 5e-3 (constant), weight decay 0.03.
The official rank sweep runs 20,000 steps; ``bench/ocr_rank_sweep.py`` runs these settings for that long."""


@dataclass(frozen=True)
class OneLayerConfig:
    """Shape and initialisation of a batch of one-layer models.

    Attributes:
        vocab_size: number of tokens; logits are returned over these ``vocab_size`` tokens.
        d_embed: one-hot embedding size ``d`` (the paper's code uses 128); must be >= ``vocab_size``.
        parameterization: ``"factorized"`` (``W_O W_V^T``) or ``"merged"`` (one matrix ``W_OV``).
        rank: inner size ``r`` of ``W_O, W_V`` (factorized only); ``None`` means ``d_embed``. A tuple gives
            every member its own rank (length ``n_seeds``).
        attention: ``"linear"`` (the paper's) or ``"softmax"`` (for comparison).
        train_kq: train ``W_KQ`` (default). When ``False`` it is frozen to all ones: every position gets
            attention score 1, so the output is the plain sum of the value vectors.
        init_scale: standard deviation of the Gaussian initialisation (default 1e-4, small; the official code's rank
            sweep uses ``d_embed ** -0.5``, i.e. N(0, 1/d)), and the scale of the identity with ``value_init``.
        value_init: ``"gaussian"`` (default): every matrix starts N(0, init_scale^2). ``"identity"`` (factorized
            only): ``W_V`` starts at ``init_scale`` times the first ``r`` columns of the ``d x d`` identity (the
            official main script's ``W_V``; that script also starts ``W_Q`` and ``W_O`` at 1e-4 times all-ones, which
            this option does not), ``W_O`` and ``W_KQ`` stay Gaussian.
        n_seeds: number of independent members trained together.
        seed: member ``i`` is initialised from ``torch.Generator().manual_seed(seed + i)``.
    """

    vocab_size: int
    d_embed: int = 128
    parameterization: Parameterization = "factorized"
    rank: int | tuple[int, ...] | None = None
    attention: Attention = "linear"
    train_kq: bool = True
    init_scale: float = 1e-4
    value_init: ValueInit = "gaussian"
    n_seeds: int = 1
    seed: int = seeds.seed(0)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_embed", "n_seeds"):
            validate.positive_int(name, getattr(self, name))
        if self.vocab_size > self.d_embed:
            raise ValueError(
                f"vocab_size={self.vocab_size} does not fit one-hot embeddings of size d_embed={self.d_embed}; "
                "need vocab_size <= d_embed"
            )
        validate.one_of("parameterization", self.parameterization, PARAMETERIZATIONS)
        validate.one_of("attention", self.attention, ATTENTIONS)
        validate.positive_number("init_scale", self.init_scale)
        validate.one_of("value_init", self.value_init, VALUE_INITS)
        if self.value_init == "identity" and self.parameterization != "factorized":
            raise ValueError(
                f"value_init='identity' sets the factorized W_V; parameterization={self.parameterization!r} has no W_V "
                "(use value_init='gaussian')"
            )
        validate.seed(self.seed)
        ranks = self.ranks
        if len(ranks) != self.n_seeds:
            raise ValueError(
                f"rank gives {len(ranks)} ranks for n_seeds={self.n_seeds} members; give one rank or one per member"
            )
        for r in ranks:
            validate.positive_int("rank", r)
        too_large = [r for r in ranks if r > self.d_embed]
        if too_large:
            raise ValueError(f"rank must be an integer in [1, d_embed={self.d_embed}], got {too_large}")
        if self.parameterization == "merged" and self.rank is not None and any(r != self.d_embed for r in ranks):
            raise ValueError(
                f"rank={self.rank!r} applies to the factorized model only; "
                f"the merged W_OV has full size d_embed={self.d_embed}"
            )

    @property
    def ranks(self) -> tuple[int, ...]:
        """The rank of every member (``d_embed`` for the merged model)."""
        if self.rank is None:
            return (self.d_embed,) * self.n_seeds
        if isinstance(self.rank, tuple):
            return self.rank
        return (self.rank,) * self.n_seeds


class OneLayer(nn.Module):
    """``n_seeds`` one-layer attention-only models evaluated in one call.

    Parameters (leading dimension ``S = n_seeds``): factorized ``W_O, W_V`` of shape ``(S, d, R)`` with
    ``R = max(ranks)`` (columns beyond a member's rank are masked to zero); merged ``W_OV`` ``(S, d, d)``;
    ``W_KQ`` ``(S, d, d)`` (a buffer of ones when frozen).
    """

    # Declared for the type checker: nn.Module types a registered buffer as ``Tensor | Module``.
    W_KQ: Tensor
    rank_mask: Tensor

    def __init__(self, config: OneLayerConfig):
        super().__init__()
        self.config = config
        S, d = config.n_seeds, config.d_embed
        R = max(config.ranks)
        gens = [torch.Generator().manual_seed(config.seed + i) for i in range(S)]

        def init(*shape: int) -> Tensor:
            return torch.stack([torch.randn(*shape, generator=g) for g in gens]) * config.init_scale

        if config.parameterization == "factorized":
            mask = torch.stack([(torch.arange(R) < r).float() for r in config.ranks])[:, None, :]  # (S, 1, R)
            self.register_buffer("rank_mask", mask)
            self.W_O = nn.Parameter(init(d, R) * mask)
            if config.value_init == "identity":
                self.W_V = nn.Parameter(torch.eye(d, R).expand(S, d, R) * config.init_scale * mask)
            else:
                self.W_V = nn.Parameter(init(d, R) * mask)
        else:
            self.W_OV = nn.Parameter(init(d, d))
        if config.train_kq:
            self.W_KQ = nn.Parameter(init(d, d))
        else:
            self.register_buffer("W_KQ", torch.ones(S, d, d))

    @property
    def device(self) -> torch.device:
        return self.W_KQ.device

    def ov(self) -> Tensor:
        """The output-value matrix ``W_OV`` of every member: ``(S, d, d)`` (``W_O W_V^T`` when factorized)."""
        if self.config.parameterization == "factorized":
            return (self.W_O * self.rank_mask) @ (self.W_V * self.rank_mask).transpose(1, 2)
        return self.W_OV

    def effective_ov(self, query_id: int) -> Tensor:
        """``W_OV`` with column ``z`` scaled by token ``z``'s attention score ``W_KQ[z, query_id]``: ``(S, d, d)``.

        With linear attention and the last token ``query_id`` (EOS), the logits are exactly this matrix applied to
        the bag of tokens (counts), so its entries are the signed contribution of each context token to each
        answer: the map to read off a trained model (``ov()`` alone can have a sign flipped by a negative score).
        """
        if self.config.attention != "linear":
            raise ValueError(f"effective_ov needs linear attention, got {self.config.attention!r}")
        validate.index("query_id", query_id, self.config.vocab_size)
        return self.ov() * self.W_KQ[:, :, query_id][:, None, :]

    def scores(self, tokens: Tensor) -> Tensor:
        """Attention weights of every position as seen from the last one: ``(S, B, T)``.

        Linear attention: ``x_t^T W_KQ x_T = W_KQ[z_t, z_T]``; softmax attention: their softmax over ``t``.
        """
        tokens = self._members(tokens)
        member = torch.arange(tokens.shape[0], device=tokens.device)[:, None, None]
        s = self.W_KQ[member, tokens, tokens[..., -1:]]
        return s.softmax(-1) if self.config.attention == "softmax" else s

    def bag(self, tokens: Tensor) -> Tensor:
        """``X^T X W_KQ x_T``: the attention-weighted count of every token in the sequence, ``(S, B, d)``."""
        tokens = self._members(tokens)
        weighted = torch.zeros(*tokens.shape[:2], self.config.d_embed, device=tokens.device, dtype=self.W_KQ.dtype)
        return weighted.scatter_add(-1, tokens, self.scores(tokens))

    def forward(self, tokens: Tensor) -> Tensor:
        """Logits at the last position.

        Args:
            tokens: ``(B, T)`` int64 (the same batch for every member) or ``(S, B, T)`` (one batch per member).
        Returns:
            ``(S, B, vocab_size)`` float.
        """
        bag = self.bag(tokens)  # (S, B, d)
        V = self.config.vocab_size
        if self.config.parameterization == "factorized":
            W_O, W_V = self.W_O * self.rank_mask, self.W_V * self.rank_mask
            return (bag @ W_V) @ W_O[:, :V].transpose(1, 2)
        return bag @ self.W_OV[:, :V].transpose(1, 2)

    def _members(self, tokens: Tensor) -> Tensor:
        S = self.config.n_seeds
        if tokens.dtype != torch.int64:
            raise ValueError(f"tokens must be int64 token ids, got dtype {tokens.dtype}")
        if tokens.ndim == 2:
            tokens = tokens.unsqueeze(0).expand(S, *tokens.shape)
        if tokens.ndim != 3 or tokens.shape[0] != S:
            raise ValueError(
                f"tokens must have shape (batch, seq) or (n_seeds={S}, batch, seq), got {tuple(tokens.shape)}"
            )
        # The range check reads the tokens' values: free on the CPU, but on an accelerator it would make every
        # training step wait for the device, so there an out-of-range id fails inside the indexing instead.
        if (
            tokens.device.type == "cpu"
            and tokens.numel()
            and (tokens.min() < 0 or tokens.max() >= self.config.vocab_size)
        ):
            raise ValueError(
                f"token ids must lie in [0, vocab_size={self.config.vocab_size}), "
                f"got range [{int(tokens.min())}, {int(tokens.max())}]"
            )
        return tokens


def per_seed_loss(model: OneLayer, batch: Batch) -> Tensor:
    """Mean cross-entropy of the answer token, one entry per member: ``(S,)``.

    ``batch`` is ``(tokens, answers)`` with tokens ``(B, T)`` or ``(S, B, T)`` and answers ``(B,)`` or ``(S, B)``.
    """
    tokens, answers = batch
    logits = model(tokens)
    answers = answers.expand(logits.shape[:2]) if answers.ndim == 1 else answers
    ce = F.cross_entropy(logits.flatten(0, 1), answers.flatten(), reduction="none")
    return ce.view(logits.shape[:2]).mean(1)


def per_seed_batches(sample: Sampler, n_seeds: int, shared: bool = False) -> Sampler:
    """Turn ``sample(batch_size, generator) -> (x (B, T), y (B,))`` into a ``make_batch`` for ``n_seeds`` members.

    Each member gets its own fresh batch (``(S, B, T)``, ``(S, B)``), unless ``shared`` (one batch for all).
    The batches of all members come from ONE call ``sample(S * B)`` dealt out round-robin (member ``s`` gets
    rows ``s, s + S, s + 2S, ...``): one call costs about as much as one member's, where a call per member made
    data generation grow with the number of seeds. A sampler that lays its rows out in blocks, like
    ``SymbolicTask.train_batch`` (thirds of three groups), gives every member exactly the same mix whenever
    each block holds a multiple of ``S`` rows (for ``train_batch``: whenever ``B`` is divisible by 3).
    """
    validate.positive_int("n_seeds", n_seeds)

    def make_batch(batch_size: int, generator: torch.Generator) -> Batch:
        if shared:
            return sample(batch_size, generator)
        x, y = sample(batch_size * n_seeds, generator)
        return x.view(batch_size, n_seeds, -1).transpose(0, 1), y.view(batch_size, n_seeds).T

    return make_batch


def member(model: OneLayer, i: int) -> OneLayer:
    """A single-seed copy of member ``i`` (same weights, ``n_seeds=1``)."""
    validate.index("member index i", i, model.config.n_seeds)
    cfg = replace(
        model.config,
        n_seeds=1,
        seed=model.config.seed + i,
        rank=model.config.ranks[i] if model.config.parameterization == "factorized" else None,
    )
    single = OneLayer(cfg).to(model.device)
    R = max(cfg.ranks)
    with torch.no_grad():
        for name, value in model.state_dict().items():
            target = single.state_dict()[name]
            target.copy_(value[i : i + 1, ..., :R] if name in ("W_O", "W_V", "rank_mask") else value[i : i + 1])
    return single


def merge(model: OneLayer) -> OneLayer:
    """Proposition 1, one way: the merged model ``W_OV = W_O W_V^T`` (same ``W_KQ``), computing the same function."""
    if model.config.parameterization != "factorized":
        raise ValueError(f"merge expects a factorized model, got parameterization {model.config.parameterization!r}")
    merged = OneLayer(replace(model.config, parameterization="merged", rank=None)).to(model.device)
    with torch.no_grad():
        merged.W_OV.copy_(model.ov())
        merged.W_KQ.copy_(model.W_KQ)
    return merged


def factorize(model: OneLayer, rank: int | None = None) -> OneLayer:
    """Proposition 1, other way: split ``W_OV = U S V^T`` into ``W_O = U S^{1/2}``, ``W_V = V S^{1/2}``.

    With ``rank=None`` (= ``d_embed``) the factorized model computes exactly the same function; a smaller
    rank keeps the top singular directions only.
    """
    if model.config.parameterization != "merged":
        raise ValueError(f"factorize expects a merged model, got parameterization {model.config.parameterization!r}")
    rank = model.config.d_embed if rank is None else rank
    fact = OneLayer(replace(model.config, parameterization="factorized", rank=rank)).to(model.device)
    U, s, Vh = (part.to(model.device) for part in torch.linalg.svd(model.W_OV.detach().cpu()))  # mps has no SVD
    root = s[:, :rank].sqrt()[:, None, :]
    with torch.no_grad():
        fact.W_O.copy_(U[..., :rank] * root)
        fact.W_V.copy_(Vh.transpose(1, 2)[..., :rank] * root)
        fact.W_KQ.copy_(model.W_KQ)
    return fact


def forward_reference(W_O: Tensor, W_V: Tensor, W_KQ: Tensor, tokens: Tensor) -> Tensor:
    """The factorized forward pass of ONE model, written literally with one-hot matrices (teaching, checks).

    Args:
        W_O, W_V: ``(d, r)``; W_KQ: ``(d, d)``; tokens: ``(T,)`` int64.
    Returns:
        ``f(X) = W_O W_V^T X^T X W_KQ x_T``: ``(d,)``.
    """
    X = F.one_hot(tokens, W_KQ.shape[0]).to(W_KQ.dtype)  # (T, d)
    return W_O @ W_V.T @ X.T @ X @ W_KQ @ X[-1]


def merged_forward_reference(W_OV: Tensor, W_KQ: Tensor, tokens: Tensor) -> Tensor:
    """The merged forward pass of ONE model on a batch, written with one-hot matrices (teaching, checks).

    Args:
        W_OV: ``(d, d)``; W_KQ: ``(d, d)``; tokens: ``(B, T)`` int64.
    Returns:
        ``(B, d)``: row ``b`` is ``f(X_b) = W_OV X_b^T X_b W_KQ x_{b,T}``.
    """
    X = F.one_hot(tokens, W_KQ.shape[0]).to(W_KQ.dtype)  # (B, T, d)
    scores = X @ W_KQ @ X[:, -1, :, None]  # (B, T, 1): attention score of every position, seen from the last
    return (X * scores).sum(1) @ W_OV.T


def column_push(params: dict[str, Tensor], tokens: Tensor, answers: Tensor, subject: int, rows: Tensor) -> Tensor:
    """How one plain gradient step (learning rate 1) moves the entries ``W_OV[rows, subject]``, to first order.

    The loss is the mean cross-entropy of ``answers`` under :func:`merged_forward_reference` with
    ``W_OV = params["W_OV"]`` (merged) or ``W_OV = W_O W_V^T`` (factorized, ``params`` has ``"W_O"`` and ``"W_V"``).
    Merged: the step changes the entries themselves, ``-dL/dW_OV[rows, subject]``. Factorized: the step changes
    ``W_V[subject]`` by ``-dL/dW_V[subject]``, which moves the entries by ``W_O[rows] @ (-dL/dW_V[subject])``
    (the step on ``W_O`` is left out: it moves every column, not this subject's alone).

    Args:
        params: ``{"W_OV", "W_KQ"}`` or ``{"W_O", "W_V", "W_KQ"}``; ``W_OV, W_KQ`` ``(d, d)``, ``W_O, W_V`` ``(d, r)``.
        tokens: ``(B, T)`` int64; answers: ``(B,)`` int64; subject: a token id; rows: ``(k,)`` int64 token ids.
    Returns:
        ``(k,)``.
    """
    if set(params) not in ({"W_OV", "W_KQ"}, {"W_O", "W_V", "W_KQ"}):
        raise ValueError(f'params must have keys {{"W_OV", "W_KQ"}} or {{"W_O", "W_V", "W_KQ"}}, got {sorted(params)}')
    validate.index("subject", subject, params["W_KQ"].shape[0])
    merged = "W_OV" in params
    moved = (params["W_OV"] if merged else params["W_V"]).detach().requires_grad_(True)
    W_OV = moved if merged else params["W_O"].detach() @ moved.T
    logits = merged_forward_reference(W_OV, params["W_KQ"].detach(), tokens)
    (grad,) = torch.autograd.grad(F.cross_entropy(logits, answers), moved)
    if merged:
        return -grad[rows, subject]
    return params["W_O"].detach()[rows] @ -grad[subject]
