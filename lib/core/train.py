"""One small training loop shared by every chapter.

The loop is deliberately plain: each step asks ``make_batch`` for a fresh batch (drawn from a seeded
CPU ``torch.Generator`` and moved to the model's device), computes ``loss_fn(model, batch)``, and takes one
optimizer step. What it adds over a hand-written loop:

- the same batches on every device: a CUDA generator (Philox) draws other numbers than the CPU's (Mersenne
  Twister) for the same seed, so batches drawn on a GPU would train the model on other data;

- the loss history is kept on the device (no host sync per step) and returned on the CPU;
- snapshots of the parameters at chosen steps ("checkpoints"), with an optional evaluation there;
- a ``tqdm`` progress bar that is silent under CI and in the book build;
- a loss that is a vector (one entry per independently trained seed) is summed for the backward
  pass and kept whole in the history. With an element-wise optimizer (Adam, AdamW, SGD) and no
  gradient clipping, seeds batched this way train exactly as they would one by one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

import torch
from torch import nn

from lib.core import seeds, validate
from lib.core.device import clock, to_device

OptimizerName = Literal["adamw", "adam", "sgd"]

OPTIMIZERS: tuple[OptimizerName, ...] = get_args(OptimizerName)

PROGRESS_ENV = "CIRCUITS_PROGRESS"
"""Set to ``0`` to silence progress bars (``make book`` and ``make test`` do; so does ``CI=true``)."""


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run; the defaults are only placeholders, chapters set their own.

    Attributes:
        steps: number of optimizer steps.
        lr: learning rate (constant), a finite positive number.
        batch_size: passed to ``make_batch``.
        weight_decay: decoupled weight decay for AdamW, L2 penalty for Adam and SGD; finite, >= 0.
        optimizer: one of :data:`OPTIMIZERS`.
        betas: Adam(W) betas, two numbers in [0, 1) (SGD ignores them).
        warmup_steps: the learning rate rises linearly from ``lr / warmup_steps`` to ``lr`` over the first
            ``warmup_steps`` steps, then stays constant (0: constant from the start).
        checkpoint_steps: steps after which to snapshot the parameters (0 = before training).
        seed: seeds the batch generator, so a re-run sees the same batches.
        progress: show a progress bar; ``None`` means "yes, unless under CI or the book build".
        desc: label of the progress bar.
    """

    steps: int = 1000
    lr: float = 1e-3
    batch_size: int = 64
    weight_decay: float = 0.0
    optimizer: OptimizerName = "adamw"
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 0
    checkpoint_steps: tuple[int, ...] = ()
    seed: int = seeds.seed(0)
    progress: bool | None = None
    desc: str = "training"

    def __post_init__(self) -> None:
        validate.positive_int("steps", self.steps)
        validate.positive_number("lr", self.lr)
        validate.positive_int("batch_size", self.batch_size)
        validate.non_negative_number("weight_decay", self.weight_decay)
        validate.one_of("optimizer", self.optimizer, OPTIMIZERS)
        validate.unit_interval_pair("betas", self.betas)
        validate.non_negative_int("warmup_steps", self.warmup_steps)
        for step in self.checkpoint_steps:
            validate.index("a checkpoint step", step, self.steps + 1, f"checkpoint_steps (steps={self.steps})")
        validate.seed(self.seed)


@dataclass
class History:
    """What a training run leaves behind.

    Attributes:
        loss: ``(steps,)`` or ``(steps, *loss_shape)`` float32 on the CPU; entry ``t`` is the loss of
            the batch seen at step ``t + 1`` (before that step's update).
        checkpoints: step -> parameter snapshot (``state_dict`` clone, on the model's device).
        evals: step -> whatever ``evaluate`` returned at that checkpoint.
        seconds: wall time of the loop.
    """

    loss: torch.Tensor
    checkpoints: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    evals: dict[int, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def checkpoint_steps(self) -> list[int]:
        return sorted(self.checkpoints)


def progress_enabled(requested: bool | None = None) -> bool:
    """Whether to draw a progress bar: an explicit request wins, else off under CI / ``CIRCUITS_PROGRESS=0``."""
    if requested is not None:
        return requested
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return False
    return os.environ.get(PROGRESS_ENV, "1") != "0"


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's first parameter (cpu for a model without parameters)."""
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def make_optimizer(params: Iterable[torch.nn.Parameter], config: TrainConfig) -> torch.optim.Optimizer:
    """The optimizer ``config.optimizer`` over ``params``, with the config's learning rate, betas and weight decay."""
    params = list(params)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    if config.optimizer == "adam":
        return torch.optim.Adam(params, lr=config.lr, betas=config.betas, weight_decay=config.weight_decay)
    return torch.optim.SGD(params, lr=config.lr, weight_decay=config.weight_decay)


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached copy of the model's ``state_dict`` (parameters and buffers)."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


Model = TypeVar("Model", bound=nn.Module)

Batch = TypeVar("Batch")


def train(
    model: Model,
    make_batch: Callable[[int, torch.Generator], Batch],
    loss_fn: Callable[[Model, Batch], torch.Tensor],
    config: TrainConfig,
    *,
    evaluate: Callable[[Model], Any] | None = None,
) -> History:
    """Train ``model`` in place and return its :class:`History`.

    Args:
        model: any ``nn.Module``; its device is where batches are moved (:func:`lib.core.device.to_device`).
        make_batch: ``(batch_size, generator) -> batch`` (a tensor or a tuple of tensors); ``generator`` is a
            CPU generator seeded with ``config.seed``, so every device trains on the same data.
        loss_fn: ``(model, batch) -> loss``, a scalar or a vector of independent losses (one per seed).
        config: steps, optimizer and checkpoint settings.
        evaluate: called under ``torch.inference_mode`` at every checkpoint step; its result is kept.
    """
    from tqdm.auto import tqdm

    device = model_device(model)
    generator = torch.Generator().manual_seed(config.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    optimizer = make_optimizer(params, config)
    warmup = config.warmup_steps
    schedule = (
        None if warmup == 0 else torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
    )
    wanted = set(config.checkpoint_steps)
    history = History(loss=torch.empty(0))

    def checkpoint(step: int) -> None:
        history.checkpoints[step] = snapshot(model)
        if evaluate is not None:
            was_training = model.training
            model.eval()
            with torch.inference_mode():
                history.evals[step] = evaluate(model)
            model.train(was_training)

    losses: torch.Tensor | None = None
    bar = tqdm(total=config.steps, desc=config.desc, disable=not progress_enabled(config.progress), leave=False)
    refresh = max(1, config.steps // 50)  # a host sync for the bar only every 2% of the run
    start = clock(device)
    model.train()
    if 0 in wanted:
        checkpoint(0)
    for step in range(1, config.steps + 1):
        batch = to_device(make_batch(config.batch_size, generator), device)
        loss = loss_fn(model, batch)
        if losses is None:
            losses = torch.empty((config.steps, *loss.shape), device=loss.device, dtype=torch.float32)
        losses[step - 1] = loss.detach()
        optimizer.zero_grad(set_to_none=True)
        (loss if loss.ndim == 0 else loss.sum()).backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
        if step in wanted:
            checkpoint(step)
        if not bar.disable and (step % refresh == 0 or step == config.steps):
            bar.update(step - bar.n)
            bar.set_postfix(loss=f"{losses[step - 1].float().mean().item():.3f}")
    bar.close()
    assert losses is not None  # config.steps >= 1: the loop ran
    history.seconds = clock(device) - start  # after the device's queued steps have run
    history.loss = losses.cpu()
    return history
