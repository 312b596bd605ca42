"""Is the phase change's onset insensitive to learning rate, warm-up and weight decay? (chapter 5; Olsson et al. 2022)

Olsson et al. report that the induction-head phase change arrives at about the same point of training when these
settings change. This trains chapter 5's two-layer model (``lib.induction.models.train_model``: seed 0, batch 32,
AdamW) from the chapter's settings (lr 3e-3, no warm-up, no weight decay), changing one setting at a time over a
small grid, and prints for each run the book's phase-change step (``lib.induction.dynamics.phase_change_step``: the
first checkpoint, every 10 steps, where the loss on repeated tokens of 256 evaluation sequences is below 1 nat) and
its window (the fall from 3 to 0.3 nats), or "none" when it has not come by the last step. It runs on
:func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses), with the CPU's data, and prints the device.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=$PWD nice -n 10 python bench/onset_grid.py [--steps 900]`` (about 20 s a run on
one CPU core). Results: bench/README.md.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import torch

from lib.core.device import clock, pick_device
from lib.core.train import TrainConfig
from lib.induction import dynamics, models, scores, sequences

BASE = models.TRAINING
GRID: dict[str, list[dict[str, float | int]]] = {
    "learning rate": [{"lr": 1.5e-3}, {"lr": 6e-3}],
    "warm-up steps": [{"warmup_steps": 50}, {"warmup_steps": 200}],
    "weight decay": [{"weight_decay": 0.01}, {"weight_decay": 0.1}],
}


def onset(train_config: TrainConfig, device: torch.device) -> tuple[int | None, tuple[int, int] | None, float]:
    """``(phase-change step, window, seconds)`` of one run of chapter 5's model with ``train_config`` on ``device``."""
    config = sequences.InductionConfig()
    eval_tokens, _, eval_mask, _, _ = sequences.eval_sets(config, device)

    def evaluate(model: torch.nn.Module) -> torch.Tensor:
        return scores.masked_mean(scores.per_token_loss(model, eval_tokens), eval_mask)

    _, history = models.train_model(config, seed=0, train_config=train_config, evaluate=evaluate, device=device)
    steps = history.checkpoint_steps
    repeated = torch.stack([history.evals[s] for s in steps])
    step = dynamics.phase_change_step(steps, repeated)
    window = dynamics.phase_change_window(steps, repeated) if step is not None else None
    return step, window, history.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=900, help="training steps of every run (default 900)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = pick_device()
    base = replace(BASE, steps=args.steps, checkpoint_steps=tuple(range(0, args.steps + 1, 10)), progress=False)
    runs = [("chapter 5's settings", "lr 3e-3, no warm-up, no decay", {})]
    for factor, changes in GRID.items():
        runs += [(factor, ", ".join(f"{k} {v:g}" for k, v in change.items()), change) for change in changes]
    start = clock(device)
    print(f"device {device}")
    print(f"{'changed':<22}{'setting':<28}{'phase change':>13}{'window':>12}{'seconds':>9}", flush=True)
    for factor, setting, change in runs:
        step, window, seconds = onset(replace(base, **change), device)  # type: ignore[arg-type]
        shown = "none" if step is None else str(step)
        span = "" if window is None else f"{window[0]}-{window[1]}"
        print(f"{factor:<22}{setting:<28}{shown:>13}{span:>12}{seconds:9.1f}", flush=True)
    print(f"total {clock(device) - start:.0f} s")


if __name__ == "__main__":
    main()
