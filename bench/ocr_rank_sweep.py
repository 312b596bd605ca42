"""The rank sweep of chapter 2 on the paper's schedule: 20,000 AdamW steps, every rank and seed in ONE batched run.

    PYTHONPATH=$PWD nice -n 10 python bench/ocr_rank_sweep.py [--setup paper|book] [--steps N] [--seeds N]
        [--ranks 2 3 4 ...] [--threads N] [--out FILE]

Chapter 2 runs a short sweep (500 steps) to stay within its time budget. This script runs the long one:

- ``--setup paper`` (default), the official code's rank sweep as issue 13 describes it: every matrix starts
  N(0, 1/d) (``init_scale = d ** -0.5``), the relation token sits at a random position after the subject
  (``SymbolicConfig(relation_position="random")``), and the official training settings (``TRAINING``: AdamW,
  lr 5e-3, weight decay 0.03, batch 252) for 20,000 steps;
- ``--setup book``: chapter 2's model (Gaussian init, std 1e-4, relation right before EOS), same schedule.

Every member (rank x seed) is one member of one :class:`lib.ocr.onelayer.OneLayer` (its own rank mask, its own batches):
one optimizer step trains them all. :func:`sweep` returns, per rank: the final training loss (the three training
groups, fixed evaluation sets), the held-out implication loss at chosen steps, and the held-out accuracy among the
implication values (per seed); ``main()`` writes it to a JSON file. :func:`run` (for ``bench/run_all.py``) returns
the same sweep as a flat dict of means per rank.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Literal

import torch

from lib.core.device import clock, pick_device
from lib.ocr.onelayer import TRAINING, OneLayerConfig
from lib.ocr.symbolic import SymbolicConfig, build_symbolic
from lib.ocr.training import candidate_accuracy, train_on_task

Setup = Literal["paper", "book"]
RANKS = (2, 3, 4, 6, 8, 16, 32, 128)
SEEDS = 3
STEPS = 20_000
REPORT_STEPS = (500, 2_000, 5_000, 10_000, 20_000)
OUT = Path(__file__).resolve().parent / "results" / "ocr_rank_sweep.json"


def configs(setup: Setup, ranks: tuple[int, ...], seeds: int) -> tuple[SymbolicConfig, OneLayerConfig]:
    """The task and model configs of a setup; member ``k * seeds + s`` has rank ``ranks[k]``, seed ``s``."""
    task_config = SymbolicConfig(relation_position="random" if setup == "paper" else "fixed")
    vocab = build_symbolic(task_config).vocab_size
    model_config = OneLayerConfig(
        vocab,
        rank=tuple(r for r in ranks for _ in range(seeds)),
        n_seeds=len(ranks) * seeds,
        init_scale=128**-0.5 if setup == "paper" else 1e-4,
    )
    return task_config, model_config


def sweep(
    setup: Setup = "paper", steps: int = STEPS, ranks: tuple[int, ...] = RANKS, seeds: int = SEEDS, every: int = 500
) -> dict:
    """Train the whole sweep once and return its numbers (losses in nats, accuracies in [0, 1])."""
    device = pick_device()
    task_config, model_config = configs(setup, ranks, seeds)
    task = build_symbolic(task_config)
    train_config = replace(TRAINING, steps=steps, desc=f"rank sweep ({setup})")
    start = clock(device)
    result = train_on_task(task, model_config, train_config, eval_every=every, device=device)
    seconds = clock(device) - start
    steps_measured = result.steps.tolist()
    x, y = task.fixed("test_implications", per_subject=2, device=device)
    with torch.inference_mode():
        accuracy = [candidate_accuracy(logits, y, task.implication_value_ids) for logits in result.model(x)]
    per_rank: dict[str, dict] = {}
    for k, r in enumerate(ranks):
        rows = slice(k * seeds, (k + 1) * seeds)
        test = result.test_loss[rows]
        per_rank[str(r)] = {
            "train loss (final, per seed)": result.train_loss[rows, -1].tolist(),
            "test loss (final, per seed)": test[:, -1].tolist(),
            "test accuracy (final, per seed)": accuracy[rows],
            "test loss (mean) at step": {
                str(s): float(test[:, steps_measured.index(s)].mean()) for s in REPORT_STEPS if s in steps_measured
            },
        }
    return {
        "setup": setup,
        "steps": steps,
        "seeds": seeds,
        "init_scale": model_config.init_scale,
        "relation_position": task_config.relation_position,
        "lr": train_config.lr,
        "weight_decay": train_config.weight_decay,
        "batch_size": train_config.batch_size,
        "device": str(device),
        "seconds": seconds,
        "ranks": per_rank,
    }


def run(setup: Setup = "paper") -> dict:
    """The sweep's means per rank, flat (``bench/run_all.py``): seconds, then per rank train loss, test loss and
    test accuracy after the last step."""
    result = sweep(setup)
    flat: dict[str, float] = {"seconds": result["seconds"]}
    for r, v in result["ranks"].items():
        for key, label in (
            ("train loss (final, per seed)", "train loss"),
            ("test loss (final, per seed)", "held-out loss"),
            ("test accuracy (final, per seed)", "held-out accuracy"),
        ):
            flat[f"rank {r}: {label}"] = sum(v[key]) / len(v[key])
    return flat


def summary(result: dict) -> str:
    """One line per rank: mean final train loss, mean test loss at the report steps, mean test accuracy."""
    lines = [f"setup {result['setup']}, {result['steps']} steps, {result['seeds']} seeds, {result['seconds']:.0f} s"]
    for r, v in result["ranks"].items():
        train = sum(v["train loss (final, per seed)"]) / result["seeds"]
        acc = v["test accuracy (final, per seed)"]
        at = "  ".join(f"{s}: {loss:.3g}" for s, loss in v["test loss (mean) at step"].items())
        seeds_test = ", ".join(f"{t:.3g}" for t in v["test loss (final, per seed)"])
        lines.append(
            f"rank {r:>3}: train {train:.2g}  test by step [{at}]  final per seed [{seeds_test}]  "
            f"accuracy {sum(acc) / len(acc):.3f} {[round(a, 3) for a in acc]}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", default="paper", choices=("paper", "book"))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--ranks", type=int, nargs="+", default=list(RANKS))
    parser.add_argument("--every", type=int, default=500, help="evaluate every this many steps")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--out", type=Path, default=None, help=f"JSON file (default {OUT} with the setup's name)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    result = sweep(args.setup, args.steps, tuple(args.ranks), args.seeds, args.every)
    if hasattr(os, "getloadavg"):
        result["load average"] = [round(x, 2) for x in os.getloadavg()]
    out = args.out or OUT.with_name(f"{OUT.stem}_{args.setup}.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(summary(result))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
