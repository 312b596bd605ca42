"""Wall time of the one-layer OCR model on the paper's training settings: one seed, 8 seeds one after the
other, and 8 seeds batched in one model (leading seed dimension, one optimizer step for all).

    PYTHONPATH=$PWD python bench/ocr_train.py [--parameterization factorized|merged] [--threads N] [--steps N]

Prints the three times and the ratio (8 batched) / (1 seed); the target is at most 2. Wall times depend on the
machine and on what else runs on it: report `uptime`'s load average with them.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

import torch

from lib.device import pick_device
from lib.ocr import build_symbolic
from lib.onelayer import PAPER_TRAIN, OneLayer, OneLayerConfig, per_seed_batches, per_seed_loss
from lib.train import train


def run(task, n_seeds: int, seed: int, parameterization: str, steps: int, device) -> float:
    model = OneLayer(OneLayerConfig(task.vocab_size, parameterization=parameterization, n_seeds=n_seeds, seed=seed)).to(device)
    config = replace(PAPER_TRAIN, steps=steps, seed=seed, progress=False)
    start = time.perf_counter()
    history = train(model, per_seed_batches(task.train_batch, n_seeds), per_seed_loss, config)
    float(history.loss[-1].sum())  # the loss history is already on the CPU: the run has finished
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parameterization", default="factorized", choices=("factorized", "merged"))
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--steps", type=int, default=PAPER_TRAIN.steps)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device()
    task = build_symbolic()
    run(task, 1, 0, args.parameterization, 20, device)  # warm-up
    one = run(task, 1, 0, args.parameterization, args.steps, device)
    sequential = sum(run(task, 1, s, args.parameterization, args.steps, device) for s in range(8))
    batched = run(task, 8, 0, args.parameterization, args.steps, device)
    print(f"device {device}, torch threads {torch.get_num_threads()}, {args.parameterization}, {args.steps} steps, batch {PAPER_TRAIN.batch_size}")
    print(f"1 seed:               {one:7.2f} s")
    print(f"8 seeds sequentially: {sequential:7.2f} s  ({sequential / one:.2f} x one seed)")
    print(f"8 seeds batched:      {batched:7.2f} s  ({batched / one:.2f} x one seed; target <= 2)")
    if hasattr(os, "getloadavg"):
        print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
