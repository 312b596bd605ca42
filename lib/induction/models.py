"""Attention-only transformer_lens 4.x models built from config, and their training (chapter 5).

Models are ``TransformerBridge``s booted natively (``boot_native``, no download), hookable by the classic names
(``blocks.1.attn.hook_k``, ``hook_pattern``, ``hook_z``, ...). Heavy import: transformer_lens is imported only
inside the functions that build models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lib.core import seeds, validate
from lib.core.device import check_device
from lib.core.train import History, TrainConfig, train
from lib.induction.scores import per_token_loss

if TYPE_CHECKING:
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge import TransformerBridge


if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

from lib.induction.sequences import InductionConfig, make_batch_fn


def attention_only_config(
    *,
    n_layers: int,
    n_heads: int,
    d_model: int,
    d_head: int,
    n_ctx: int,
    vocab: int,
    layer_norm: bool = False,
    init_std: float | None = None,
    seed: int | None = 0,
) -> TransformerBridgeConfig:
    """The ``TransformerBridgeConfig`` of an attention-only model with learned positions (here and in
    :mod:`lib.induction.natural`); ``init_std`` ``None`` keeps transformer_lens' ``0.8 / sqrt(d_model)``."""
    from transformer_lens.config import TransformerBridgeConfig

    return TransformerBridgeConfig(
        d_model=d_model,
        d_head=d_head,
        n_heads=n_heads,
        n_layers=n_layers,
        n_ctx=n_ctx,
        d_vocab=vocab,
        attn_only=True,
        normalization_type="LN" if layer_norm else None,
        positional_embedding_type="standard",
        initializer_range=-1.0 if init_std is None else init_std,
        seed=seed,
    )


def bridge_config(config: InductionConfig, seed: int | None = 0) -> TransformerBridgeConfig:
    """The ``TransformerBridgeConfig`` of an attention-only model with no LayerNorm.

    No LayerNorm: the residual stream is a plain sum, so a head's direct effect on the logits (the copying score) is
    exactly ``W_E W_V W_O W_U``, and weights can be set by hand.
    """
    return attention_only_config(
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        d_model=config.d_model,
        d_head=config.d_head,
        n_ctx=config.seq_len,
        vocab=config.vocab,
        init_std=config.init_std,
        seed=seed,
    )


def make_model(
    config: InductionConfig = InductionConfig(), seed: int = seeds.seed(0), device: torch.device | str | None = None
) -> TransformerBridge:
    """A freshly initialised attention-only ``TransformerBridge`` (``boot_native``, no download).

    The model maps ``(batch, seq) int64`` tokens to ``(batch, seq, vocab)`` logits, supports
    ``run_with_cache`` / ``run_with_hooks`` with the classic hook names, and exposes ``W_Q, W_K, W_V``
    ``(n_layers, n_heads, d_model, d_head)``, ``W_O`` ``(n_layers, n_heads, d_head, d_model)``,
    ``W_E`` ``(vocab, d_model)``, ``W_pos`` ``(seq_len, d_model)`` and ``W_U`` ``(d_model, vocab)``.
    """
    from transformer_lens.model_bridge.sources import boot_native

    return boot_native(bridge_config(config, validate.seed(seed)), device=check_device(device))


def config_of(model: TransformerBridge) -> InductionConfig:
    """The :class:`InductionConfig` shape of a model built here (task fields keep their defaults)."""
    cfg = model.cfg
    defaults = InductionConfig()
    seq = cfg.n_ctx
    return InductionConfig(
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_model=cfg.d_model,
        d_head=cfg.d_head,
        vocab=cfg.d_vocab,
        seq_len=seq,
        min_repeat=min(defaults.min_repeat, (seq - 1) // 2),
        max_repeat=min(defaults.max_repeat, (seq - 1) // 2),
        prefix_segment=min(defaults.prefix_segment, (seq - 1) // defaults.prefix_repeats, cfg.d_vocab - 1),
    )


def training_loss(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss over every position: the ``loss_fn`` for :func:`lib.core.train.train` (lib's own
    batches, so the ids go unchecked: no read-back from the device a step)."""
    return per_token_loss(model, tokens, check_ids=False).mean()


TRAINING = TrainConfig(
    steps=600, lr=3e-3, batch_size=32, checkpoint_steps=tuple(range(0, 601, 10)), seed=0, desc="training"
)
"""Chapter 5's training run: 600 AdamW steps at lr 3e-3, batches of 32, a checkpoint every 10 steps."""


def fit(
    model: nn.Module,
    config: InductionConfig,
    seed: int,
    *,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
) -> History:
    """Train ``model`` in place on :func:`repeated_sequences` of ``config``; ``seed`` seeds the batches.

    ``train_config.seed`` is replaced by ``seed``: the book's runs seed weights and batches alike.

    Args:
        evaluate: passed to :func:`lib.core.train.train`, called at every checkpoint.
    """
    return train(model, make_batch_fn(config), training_loss, replace(train_config, seed=seed), evaluate=evaluate)


def train_model(
    config: InductionConfig = InductionConfig(),
    seed: int = seeds.seed(0),
    *,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
    device: torch.device | str | None = None,
) -> tuple[TransformerBridge, History]:
    """Build a model with :func:`make_model` and train it on :func:`repeated_sequences`, as chapter 5 does.

    ``seed`` seeds both the initial weights and the training batches (see :func:`fit`), like
    :func:`lib.induction.smear.train_model`; chapter 5's run is ``train_model(InductionConfig(), seed=0)``.

    Returns:
        ``(model, history)``: the trained model and its :class:`lib.core.train.History` (parameter snapshots at
        ``train_config.checkpoint_steps``).
    """
    model = make_model(config, seed=seed, device=device)
    return model, fit(model, config, seed, train_config=train_config, evaluate=evaluate)
