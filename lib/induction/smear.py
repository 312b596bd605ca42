"""Smeared keys: one learned scalar per head mixes each key with the previous position's key.

Olsson et al. (2022) give every attention head ``h`` a parameter ``alpha[h]`` and replace its keys by

    k_j  <-  sigmoid(alpha[h]) * k_j  +  (1 - sigmoid(alpha[h])) * k_{j-1}        (j >= 1; k_0 unchanged)

so a key can carry "which token sat one position earlier" without a previous-token head in an earlier
layer. A one-layer model can then form induction heads, and a two-layer model forms them sooner.

Here the smear is a permanent forward hook on ``blocks.{l}.attn.hook_k`` (shape ``(batch, seq, heads,
d_head)``) of a transformer_lens 4.x ``TransformerBridge`` built by :func:`lib.induction.models.make_model`.
The scalars live in a :class:`SmearedKeys` module registered *inside* the model
(``model.original_model.smear``), so:

- ``model.parameters()`` includes them: :func:`lib.core.train.train` trains them with the rest of the model;
- ``model.state_dict()`` includes them under the key :data:`STATE_KEY` (``"smear.alpha"``), so
  checkpoints from :class:`lib.core.train.History` and :func:`lib.induction.scores.over_checkpoints` carry them.
  To load a smeared checkpoint into a fresh model, attach the smear first (:func:`attach_smear`), then
  ``model.load_state_dict(state)``;
- the smear can be switched off (``with smear_disabled(model): ...``):
  the keys then pass through unchanged, exactly as in a plain model.

:func:`make_model` and :func:`train_model` build (and train) chapter 6's models, smeared or plain.

Initialisation: ``alpha = 0``, i.e. ``sigmoid(alpha) = 0.5``: every key starts as an equal mix of
itself and its predecessor. It is the neutral point (neither "current" nor "previous" preferred) and
the point where ``sigmoid`` is steepest, so gradient descent can move each head either way fastest.
It matters: from ``alpha = 2`` (``sigmoid = 0.88``, nearly a plain model) a one-layer model pushes
``sigmoid`` up to about 0.97 and forms no induction head in 400 steps (``bench/smear_train.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

from lib.core import seeds, shipped, validate
from lib.core.train import History, TrainConfig, model_device
from lib.induction import handbuilt, models, sequences

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


ModelT = TypeVar("ModelT", bound=nn.Module)

STATE_KEY = "smear.alpha"
"""The key of the ``(n_layers, n_heads)`` smear parameters in ``model.state_dict()``."""

INIT_ALPHA = 0.0
"""Default initial ``alpha`` of every head: ``sigmoid(0) = 0.5``, an even mix (see the module docstring)."""

TRAINING = replace(models.TRAINING, steps=400, checkpoint_steps=tuple(range(0, 401, 10)), desc="smeared")
"""A smeared model's training: chapter 5's settings (lr 3e-3, batch 32, a checkpoint every 10 steps) for 400 steps
(chapter 7's smeared model, the sensitivity runs of ``bench/smear_train.py``, exercise 6.2)."""

ARMS = {"1 layer": (1, False), "1 layer, smeared": (1, True), "2 layers": (2, False), "2 layers, smeared": (2, True)}
"""Chapter 6's four arms: name -> ``(n_layers, smeared)``."""

ARM_STEPS = {"1 layer": 500, "1 layer, smeared": 300, "2 layers": 500, "2 layers, smeared": 300}
"""Training steps of each arm in chapter 6: every arm runs well past its phase change (seeds 0-2: the plain
two-layer models pass :data:`lib.induction.dynamics.PHASE_CHANGE_LOSS` at steps 330-350, the smeared ones by step 190),
and the plain one-layer model gets as long as the plain two-layer one to show that it never does. Training is
deterministic and the learning rate constant, so a shorter run is exactly the start of a longer one."""


MIXED_BENCH_PATH = shipped.DATA / "smear_mixed.json"
"""The plain and smeared one-layer models on chapter 7's mixed task, five seeds (``bench/smear_mixed.py``)."""


def load_mixed_bench(path: Path | str = MIXED_BENCH_PATH) -> dict:
    """The JSON of ``bench/smear_mixed.py``: ``settings``, checkpoint ``steps`` and, per seed and arm ("1 layer",
    "1 layer, smeared"), the ICL curves by kind of late position (``lib.induction.mixed.POSITION_KINDS``) and the final
    early and late losses; the smeared arm also holds its final ICL without the smear and its ``sigma``."""
    required = ("settings", "steps", "runs")
    return shipped.load_results(path, required, what="smear-on-the-mixed-task results", made_by="bench/smear_mixed.py")


def arm_training(arm: str) -> TrainConfig:
    """:data:`TRAINING` with the arm's number of steps (:data:`ARM_STEPS`), a checkpoint every 10 steps."""
    steps = ARM_STEPS[validate.one_of("arm", arm, tuple(ARM_STEPS))]
    return replace(TRAINING, steps=steps, checkpoint_steps=tuple(range(0, steps + 1, 10)), desc=arm)


def smear_keys(keys: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Mix each key with the previous position's key: ``sigma * k_j + (1 - sigma) * k_{j-1}``; ``k_0`` unchanged.

    Args:
        keys: ``(batch, seq, heads, d_head)``.
        sigma: ``(heads,)`` weights of the current key, in ``[0, 1]``.

    Returns:
        ``(batch, seq, heads, d_head)``.
    """
    if keys.ndim != 4 or sigma.shape != (keys.shape[2],):
        raise ValueError(
            f"need keys (batch, seq, heads, d_head) and sigma (heads,); "
            f"got {tuple(keys.shape)} and {tuple(sigma.shape)}"
        )
    previous = torch.cat([keys[:, :1], keys[:, :-1]], dim=1)  # position 0 is its own predecessor: unchanged
    weight = sigma.to(keys.dtype)[:, None]  # (heads, 1), broadcast over batch, seq, d_head
    return weight * keys + (1 - weight) * previous


class SmearedKeys(nn.Module):
    """The smear parameters of a whole model and the switch that turns the smear on and off.

    Attributes:
        alpha: ``(n_layers, n_heads)`` parameter; ``sigmoid(alpha[l, h])`` weights the current key of head
            ``h`` in layer ``l``.
        enabled: when ``False`` the hooks return the keys unchanged.
    """

    def __init__(self, alpha: torch.Tensor) -> None:
        super().__init__()
        self.alpha = nn.Parameter(alpha.detach().clone().float())
        self.enabled = True

    def sigma(self) -> torch.Tensor:
        """``(n_layers, n_heads)`` weight of the current key, ``sigmoid(alpha)``."""
        return torch.sigmoid(self.alpha)

    def hook(self, layer: int) -> Callable[[torch.Tensor, Any], torch.Tensor]:
        """The forward hook for ``blocks.{layer}.attn.hook_k``."""

        def smear_hook(keys: torch.Tensor, hook: Any = None) -> torch.Tensor:
            if not self.enabled:
                return keys
            return smear_keys(keys, torch.sigmoid(self.alpha[layer]))

        return smear_hook


def _attention_layers(model: nn.Module) -> tuple[int, int]:
    """``(n_layers, n_heads)`` of a model with hookable attention keys, or ``ValueError``."""
    cfg = getattr(model, "cfg", None)
    n_layers, n_heads = getattr(cfg, "n_layers", 0), getattr(cfg, "n_heads", 0)
    blocks = getattr(model, "blocks", None) if cfg is not None else None
    if (
        not n_layers
        or not n_heads
        or blocks is None
        or not all(hasattr(getattr(b, "attn", None), "hook_k") for b in blocks)
    ):
        raise ValueError(
            f"smeared keys need a transformer_lens model with attention layers (blocks.{{l}}.attn.hook_k); "
            f"got {type(model).__name__} with n_layers={n_layers!r}, n_heads={n_heads!r}"
        )
    return n_layers, n_heads


def smear_of(model: nn.Module) -> SmearedKeys | None:
    """The model's :class:`SmearedKeys`, or ``None`` for a plain model."""
    smear = getattr(getattr(model, "original_model", None), "smear", None)
    return smear if isinstance(smear, SmearedKeys) else None


def _attached(model: nn.Module) -> SmearedKeys:
    """The model's :class:`SmearedKeys`; ``ValueError`` for a plain model."""
    smear = smear_of(model)
    if smear is None:
        raise ValueError("the model has no smeared keys; call attach_smear(model) first")
    return smear


def attach_smear(model: TransformerBridge, alpha: torch.Tensor | float = INIT_ALPHA) -> SmearedKeys:
    """Give every head of ``model`` smeared keys, in place; returns the new :class:`SmearedKeys`.

    Args:
        model: a ``TransformerBridge`` from :func:`lib.induction.models.make_model` (any number of layers).
        alpha: initial ``alpha``: a number for every head, or a ``(n_layers, n_heads)`` tensor.

    Raises:
        ValueError: the model has no attention layers, already has smeared keys, or ``alpha`` has
            the wrong shape.
    """
    n_layers, n_heads = _attention_layers(model)
    if smear_of(model) is not None:
        raise ValueError("this model already has smeared keys (attach_smear was called before)")
    device = model_device(model)
    if isinstance(alpha, torch.Tensor):
        if alpha.shape != (n_layers, n_heads):
            raise ValueError(
                f"alpha must have shape (n_layers, n_heads) = ({n_layers}, {n_heads}), got {tuple(alpha.shape)}"
            )
        values = alpha.to(device)
    elif isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        values = torch.full((n_layers, n_heads), float(alpha), device=device)
    else:
        raise ValueError(f"alpha must be a number or a ({n_layers}, {n_heads}) tensor, got {alpha!r}")
    smear = SmearedKeys(values)
    # registered on the native module: the bridge's parameters() and state_dict() delegate to it
    model.original_model.add_module("smear", smear)
    for layer in range(n_layers):
        model.add_hook(f"blocks.{layer}.attn.hook_k", smear.hook(layer), is_permanent=True)
    return smear


def smear_sigma(model: nn.Module) -> torch.Tensor:
    """``(n_layers, n_heads)`` weight of the current key, ``sigmoid(alpha)``, detached on the CPU."""
    return _attached(model).sigma().detach().cpu()


def sigma_of_state(state: dict[str, torch.Tensor]) -> torch.Tensor:
    """``sigmoid(alpha)`` ``(n_layers, n_heads)`` stored in a checkpoint of a smeared model."""
    if STATE_KEY not in state:
        raise ValueError(f"the checkpoint has no {STATE_KEY!r}: it is not from a smeared model")
    return torch.sigmoid(state[STATE_KEY].detach().float()).cpu()


def sigma_trajectory(checkpoints: dict[int, dict[str, torch.Tensor]], steps: Sequence[int]) -> torch.Tensor:
    """:func:`sigma_of_state` at each of ``steps`` (keys of ``checkpoints``, in the order given).

    Returns:
        ``(len(steps), n_layers, n_heads)`` on the CPU.
    """
    steps = list(steps)
    if not steps:
        raise ValueError("steps must name at least one checkpoint, got an empty sequence")
    missing = [step for step in steps if step not in checkpoints]
    if missing:
        raise ValueError(f"steps must be keys of checkpoints; not stored: {missing[:5]}")
    return torch.stack([sigma_of_state(checkpoints[step]) for step in steps])


@contextlib.contextmanager
def smear_disabled(model: ModelT) -> Iterator[ModelT]:
    """``with smear_disabled(model): ...`` runs the model with plain keys, then restores the previous setting."""
    smear = _attached(model)
    before = smear.enabled
    smear.enabled = False
    try:
        yield model
    finally:
        smear.enabled = before


def make_model(
    config: sequences.InductionConfig = sequences.InductionConfig(),
    seed: int = seeds.seed(0),
    *,
    smeared: bool = True,
    alpha: torch.Tensor | float = INIT_ALPHA,
    device: torch.device | str | None = None,
) -> TransformerBridge:
    """:func:`lib.induction.models.make_model` (same weights for the same seed), with smeared keys if ``smeared``."""
    model = models.make_model(config, seed=seed, device=device)
    if smeared:
        attach_smear(model, alpha)
    return model


def train_model(
    config: sequences.InductionConfig = sequences.InductionConfig(n_layers=1),
    seed: int = seeds.seed(0),
    *,
    smeared: bool = True,
    train_config: TrainConfig = TRAINING,
    evaluate: Callable[[nn.Module], Any] | None = None,
    alpha: torch.Tensor | float = INIT_ALPHA,
    device: torch.device | str | None = None,
) -> tuple[TransformerBridge, History]:
    """Build and train one model of chapter 6 (by default smeared, one layer) on the repeated-token task.

    ``seed`` seeds both the initial weights and the training batches (see :func:`lib.induction.models.fit`), as
    chapter 5 does with seed 0. The returned history's checkpoints include :data:`STATE_KEY` when
    ``smeared``; reload one with ``make_model(config, seed, smeared=True)`` followed by
    ``model.load_state_dict(history.checkpoints[step])``.

    Returns:
        ``(model, history)``: the model after the last step, and :class:`lib.core.train.History`.
    """
    model = make_model(config, seed, smeared=smeared, alpha=alpha, device=device)
    return model, models.fit(model, config, seed, train_config=train_config, evaluate=evaluate)


def run_with_smear(model: TransformerBridge, tokens: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """Logits of a plain model run once with smeared keys, ``sigmoid(alpha[l])`` in layer ``l``; nothing stays attached.

    The same forward pass as :func:`attach_smear` with this ``alpha``, through temporary hooks on every layer's
    ``blocks.{l}.attn.hook_k`` (removed on return, also when the pass raises).

    Args:
        model: a plain (not smeared) model of :func:`lib.induction.models.make_model`.
        tokens: ``(batch, seq) int64``.
        alpha: ``(n_layers, n_heads)``.

    Returns:
        ``(batch, seq, vocab)`` logits.
    """
    n_layers, n_heads = _attention_layers(model)
    if smear_of(model) is not None:
        raise ValueError("the model already has smeared keys: run_with_smear needs a plain model")
    if not isinstance(alpha, torch.Tensor) or alpha.shape != (n_layers, n_heads):
        raise ValueError(
            f"alpha must be a tensor of shape (n_layers, n_heads) = ({n_layers}, {n_heads}), "
            f"got {getattr(alpha, 'shape', alpha)!r}"
        )
    sigma = torch.sigmoid(alpha.to(model_device(model)))

    def hook(layer: int) -> Callable[[torch.Tensor, Any], torch.Tensor]:
        return lambda keys, hook: smear_keys(keys, sigma[layer])

    hooks = [(f"blocks.{layer}.attn.hook_k", hook(layer)) for layer in range(n_layers)]
    with model.hooks(fwd_hooks=hooks):
        return model(tokens)


def hand_built_head_weights(layout: handbuilt.HandBuiltLayout, strength: float = 20.0) -> dict[str, torch.Tensor]:
    """A one-layer induction head that works through fully smeared keys (``sigmoid(alpha) = 0``).

    With the smear, the key at ``j`` is the raw key of position ``j - 1``; so query and key read the same
    ``token`` slot, and a query holding ``A`` matches the position *after* an earlier ``A``. No
    previous-token head and no ``previous`` slot are needed.

    Returns:
        ``W_Q (d_model, d_head)``: the ``token`` slot of content token ``A`` -> head dimension ``A``, times
        ``strength * sqrt(d_head)``; ``W_K``: the ``token`` slot of ``A`` -> dimension ``A`` (BOS has no key,
        so it matches nothing); ``W_V``: the ``token`` slot of ``B`` -> dimension ``B``; ``W_O``: dimension
        ``B`` -> the ``output`` slot of ``B``, for every content token. Unlike chapter 5's induction head it
        has no resting place on BOS: under a full smear, BOS's key is also the key of position 1.
    """
    d, dh = layout.d_model, layout.d_head
    tok = torch.arange(1, layout.vocab)  # content tokens
    W_Q = torch.zeros(d, dh)
    W_Q[layout.token.start + tok, tok] = strength * dh**0.5
    W_K = torch.zeros(d, dh)
    W_K[layout.token.start + tok, tok] = 1.0
    W_V = torch.zeros(d, dh)
    W_V[layout.token.start + tok, tok] = 1.0
    W_O = torch.zeros(dh, d)
    W_O[tok, layout.output.start + tok] = 1.0
    return {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O}


def hand_built_model(
    vocab: int = 32,
    seq_len: int = 45,
    strength: float = 20.0,
    head: dict[str, torch.Tensor] | None = None,
    device: torch.device | str | None = None,
) -> TransformerBridge:
    """A one-layer, one-head model with fully smeared keys (``sigmoid(alpha) = 0``) and a hand-set head.

    Embeddings and unembedding are :func:`lib.induction.handbuilt.embedding_weights`'; the head is ``head`` (a dict of
    :func:`lib.induction.handbuilt.set_head`'s keyword arguments), by default :func:`hand_built_head_weights`. Every
    other weight is zero. ``smear_disabled(model)`` runs the same head with plain keys.
    """
    if not strength > 0:
        raise ValueError(f"strength must be positive, got {strength!r}")
    config = replace(handbuilt.hand_built_config(vocab, seq_len), n_layers=1)
    layout = handbuilt.HandBuiltLayout(vocab, seq_len)
    model = handbuilt.blank_model(config, layout, strength, device)
    handbuilt.set_head(model, 0, 0, **(hand_built_head_weights(layout, strength) if head is None else head))
    attach_smear(model, float("-inf"))  # sigmoid(-inf) = 0: every key is its predecessor's
    return model
