"""Collect the logs of the small-batch two-layer runs on natural text (issue 39) into ``lib/data/natural_ladder.json``,
which chapter 8 loads (:mod:`lib.induction.natural.ladder`).

Each run is :func:`lib.induction.natural.recipes.run` of a custom recipe, started in the background on one thread:

    OMP_NUM_THREADS=1 nice -n 19 python -c "from lib.induction.natural import recipes, corpus; \\
        from lib.induction.natural.slim import SlimConfig; \\
        r = recipes.Recipe(SlimConfig(2, HEADS, WIDTH, 32, 128, corpus.VOCAB, positions='shortformer'), \\
            steps=STEPS, lr=LR, batch_size=8, warmup_steps=200, clip=1.0, every=EVERY, seed=SEED, \\
            data=DATA, repeat_share=SHARE); \\
        recipes.run(r, open('_build/natural-runs/NAME.jsonl', 'w'))"

(``EVERY=500``, ``data='text'`` and ``repeat_share=0`` unless RUNS says otherwise: the runs with repeated spans used
``repeat_share=0.1`` and ``0.5`` and ``EVERY=250``, those on repeated random tokens ``data='repeated random tokens'``,
``EVERY=250``, or 100 for seed 0, whose ``STEPS=20000`` was stopped by hand.)

Run: ``PYTHONPATH=$PWD python bench/natural_ladder.py`` (reads ``_build/natural-runs/*.jsonl``, the logs of RUNS).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "_build" / "natural-runs"
OUT = ROOT / "lib" / "data" / "natural_ladder.json"
TOKENS_PER_STEP = 8 * 127  # batch 8 x context 128, the last position has no target

TEXT = "Python source"
PLANTED = "Python source, {share:.0%} of windows repeat a span"
RANDOM = "repeated random tokens"

W128 = {"width": 128, "heads": 4, "d_head": 32}

RUNS = {
    "width 128, lr 5e-3": (
        "w128_lr5e-3_long.jsonl",
        {**W128, "lr": 5e-3, "data": TEXT, "stopped": "at its budget of 88,000 steps"},
    ),
    "width 128, lr 1e-2": (
        "w128_lr1e-2.jsonl",
        {**W128, "lr": 1e-2, "data": TEXT, "stopped": "by hand: the loss spiked and no circuit grew"},
    ),
    "width 256, lr 3e-3": (
        "w256_lr3e-3.jsonl",
        {
            "width": 256,
            "heads": 8,
            "d_head": 32,
            "lr": 3e-3,
            "data": TEXT,
            "stopped": "by hand, when the time for it ran out",
        },
    ),
    "width 128, lr 3e-3": (
        "w128_lr3e-3.jsonl",
        {**W128, "lr": 3e-3, "data": TEXT, "stopped": "at its budget of 20,000 steps"},
    ),
    "10% repeated spans": (
        "planted_s0.1_lr3e-3_seed0.jsonl",
        {**W128, "lr": 3e-3, "data": PLANTED.format(share=0.1), "stopped": "at its budget of 20,000 steps"},
    ),
    "50% repeated spans": (
        "planted_s0.5_lr3e-3_seed0.jsonl",
        {**W128, "lr": 3e-3, "data": PLANTED.format(share=0.5), "stopped": "at its budget of 20,000 steps"},
    ),
    **{
        f"random tokens, seed {seed}": (
            log,
            {**W128, "lr": 3e-3, "data": RANDOM, "seed": seed, "stopped": stopped},
        )
        for seed, log, stopped in [
            (0, "synthetic_check20k.jsonl", "by hand at step 11,400, long after its phase change"),
            (1, "random_seed1_20k.jsonl", "at its budget of 20,000 steps"),
            (2, "random_seed2.jsonl", "at its budget of 10,000 steps"),
            (3, "random_seed3.jsonl", "at its budget of 12,000 steps"),
        ]
    },
}
"""name -> (log file in LOGS, settings); every run: 2 layers, no LayerNorm, shortformer positions, batch 8 x context
128, AdamW, 200 warm-up steps, gradient norm clipped at 1, seed 0 unless its settings say another. ``data``: what it
trained on (:data:`lib.induction.natural.recipes.DATA_KINDS`, and the share of planted repeats); the held-out text
and the probe are chapter 8's either way."""


def main() -> None:
    runs = {}
    for name, (log, settings) in RUNS.items():
        lines = [json.loads(line) for line in (LOGS / log).read_text().splitlines()]
        runs[name] = {
            "settings": {"batch": 8, "context": 128, "seed": 0, **settings},
            "tokens_M": [round(e["step"] * TOKENS_PER_STEP / 1e6, 3) for e in lines],
            "held_loss": [round(e["held_loss"], 4) for e in lines],
            "prefix_matching": [round(e["best_layer1_pm"], 4) for e in lines],
            "previous_token": [round(max(e["prev_token"][0]), 4) for e in lines],
            "copies": [[round(e["repeat_first"], 3), round(e["repeat_second"], 3)] for e in lines],
            "last_layer1_pm": [round(v, 4) for v in lines[-1]["prefix_matching"][-1]],
        }
        print(f"{name}: {lines[-1]['step']} steps, {runs[name]['tokens_M'][-1]} M tokens")
    OUT.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
