"""Wall time of the one-layer OCR model on the paper's training settings: one seed, 8 seeds one after the
other, and 8 seeds batched in one model (leading seed dimension, one optimizer step for all).

    PYTHONPATH=$PWD python bench/ocr_train.py [--parameterization factorized|merged] [--threads N] [--steps N]

Prints the three times and the ratio (8 batched) / (1 seed); the target is at most 2. Wall times depend on the
machine and on what else runs on it: report `uptime`'s load average with them.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

import torch

from lib.core.device import clock, pick_device
from lib.core.train import train
from lib.ocr.onelayer import TRAINING, OneLayer, OneLayerConfig, per_seed_batches, per_seed_loss
from lib.ocr.symbolic import SymbolicTask, build_symbolic


def time_training(
    task: SymbolicTask, n_seeds: int, seed: int, parameterization: str, steps: int, device: torch.device
) -> float:
    """Seconds to train ``n_seeds`` members for ``steps`` steps on ``device``, until the device has run them."""
    model = OneLayer(OneLayerConfig(task.vocab_size, parameterization=parameterization, n_seeds=n_seeds, seed=seed)).to(
        device
    )
    config = replace(TRAINING, steps=steps, seed=seed, progress=False)
    start = clock(device)
    train(model, per_seed_batches(task.train_batch, n_seeds), per_seed_loss, config)
    return clock(device) - start


def run(parameterization: str = "factorized", steps: int = TRAINING.steps) -> dict:
    """Seconds for 1 seed, 8 seeds one after another and 8 seeds batched, and the ratios (bench/run_all.py)."""
    device = pick_device()
    task = build_symbolic()
    time_training(task, 1, 0, parameterization, 20, device)  # warm-up
    one = time_training(task, 1, 0, parameterization, steps, device)
    sequential = sum(time_training(task, 1, s, parameterization, steps, device) for s in range(8))
    batched = time_training(task, 8, 0, parameterization, steps, device)
    return {
        "1 seed (s)": one,
        "8 seeds sequential (s)": sequential,
        "8 seeds batched (s)": batched,
        "batched / 1 seed (target <= 2)": batched / one,
        "sequential / batched": sequential / batched,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parameterization", default="factorized", choices=("factorized", "merged"))
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--steps", type=int, default=TRAINING.steps)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"device {pick_device()}, torch threads {torch.get_num_threads()}, {args.parameterization}, "
        f"{args.steps} steps, batch {TRAINING.batch_size}"
    )
    for key, value in run(args.parameterization, args.steps).items():
        print(f"{key:>32}: {value:7.2f}")
    if hasattr(os, "getloadavg"):
        print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
