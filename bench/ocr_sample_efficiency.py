"""Sample efficiency of the *trained* one-layer model (chapter 3): m_train x m_test on chapter 3's fast schedule,
beside the law min(1, sqrt(m_train / m_test)) of the min-nuclear-norm solution.

    PYTHONPATH=$PWD python bench/ocr_sample_efficiency.py [--seeds 3] [--json lib/data/ocr_sample_efficiency.json]

At every ``(m_train, m_test)`` of {1, 2} x {1, 3, 8}: the symbolic task with 20 fact values and
``20 * (m_train + m_test)`` subjects, ``m_train`` of each value's subjects with their implication in training;
each seed trains one factorized and one merged model (chapter 3's 500 AdamW steps, lr 2e-2, batch 126, weight
decay 0.03; the chapters' width 128, or the vocabulary's size where that is larger: one-hot embeddings), and is
measured by :func:`lib.ocr.theorem.margin_ratio` (held-out over training-implication margin on
the noise-free sequences) and by the held-out implication accuracy among the 20 implication values on the noisy
sequences (two per subject). Seeds run one after another (``n_seeds=1``), so seed 0 alone reproduces its numbers;
``tests/ocr/test_theorem.py`` reruns seed 0 at one point against the shipped JSON. Training runs on
:func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses), with the CPU's batches; the margins are computed in
float64 on the CPU.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

import torch

from lib.core.device import clock, pick_device
from lib.ocr import onelayer, theorem, training
from lib.ocr.symbolic import SymbolicConfig, build_symbolic

M_TRAIN = (1, 2)
M_TEST = (1, 3, 8)
N_FACTS = 20
FAST = replace(onelayer.TRAINING, steps=500, lr=2e-2, batch_size=126, desc="fast schedule", progress=False)
ARMS = ("factorized", "merged")
D_EMBED = onelayer.OneLayerConfig(1).d_embed  # the chapters' width; widened where the vocabulary needs more


def point(m_train: int, m_test: int, seed: int, arm: str, device: torch.device | str = "cpu") -> dict:
    """One seed, one parameterization at ``(m_train, m_test)``, trained on ``device``: its margin ratio and held-out
    accuracy."""
    task = build_symbolic(
        SymbolicConfig(n_subjects=N_FACTS * (m_train + m_test), n_facts=N_FACTS, train_per_fact=m_train, seed=seed)
    )
    run = training.train_on_task(
        task,
        onelayer.OneLayerConfig(
            task.vocab_size, d_embed=max(D_EMBED, task.vocab_size), parameterization=arm, n_seeds=1, seed=seed
        ),
        replace(FAST, seed=seed),
        device=device,
    )
    problem = theorem.ocr_problem(task)
    x, y = task.fixed("test_implications", 2, device=device)
    with torch.no_grad():
        logits = run.model(x)[0]
    return {
        "margin ratio": float(theorem.margin_ratio(run.model, problem, task.eos_id)[0]),
        "held-out accuracy": training.candidate_accuracy(logits, y, task.implication_value_ids),
    }


def run(n_seeds: int = 3, json_path: str | None = None) -> dict:
    """Every point of the grid on seeds ``0 .. n_seeds-1`` (bench/run_all.py's interface: a flat dict)."""
    device = pick_device()
    start = clock(device)
    points = []
    for m_train in M_TRAIN:
        for m_test in M_TEST:
            row: dict = {"m_train": m_train, "m_test": m_test, "law": theorem.held_out_margin_law(m_train, m_test)}
            for arm in ARMS:
                seeds = [point(m_train, m_test, s, arm, device) for s in range(n_seeds)]
                row[arm] = {k: [s[k] for s in seeds] for k in seeds[0]}
            points.append(row)
    if json_path is not None:
        with open(json_path, "w") as f:
            json.dump({"schedule": "chapter 3's fast schedule", "seeds": n_seeds, "points": points}, f, indent=1)
            f.write("\n")
    out: dict = {"device": str(device)}
    for p in points:
        key = f"({p['m_train']}, {p['m_test']})"
        for arm in ARMS:
            r, a = p[arm]["margin ratio"], p[arm]["held-out accuracy"]
            out[f"{key} {arm}: margin ratio (law {p['law']:.3f})"] = f"{min(r):.3f}-{max(r):.3f}"
            out[f"{key} {arm}: held-out accuracy"] = f"{min(a):.2f}-{max(a):.2f}"
    out["seconds"] = clock(device) - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json", default=None, help="write every seed's numbers to this JSON file")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for key, value in run(args.seeds, args.json).items():
        print(f"{key}: {value:.2f}" if isinstance(value, float) else f"{key}: {value}")


if __name__ == "__main__":
    main()
