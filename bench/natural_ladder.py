"""Collect the logs of the small-batch two-layer runs on natural text (issue 39) into ``lib/data/natural_ladder.json``,
which chapter 8 loads (:mod:`lib.induction.natural.ladder`).

Each run is :func:`lib.induction.natural.recipes.run` of a custom recipe, started in the background on one thread:

    OMP_NUM_THREADS=1 nice -n 19 python -c "from lib.induction.natural import recipes, corpus; \\
        from lib.induction.natural.slim import SlimConfig; \\
        r = recipes.Recipe(SlimConfig(2, HEADS, WIDTH, 32, 128, corpus.VOCAB, positions='shortformer'), \\
            steps=88000, lr=LR, batch_size=8, warmup_steps=200, clip=1.0, every=500); \\
        recipes.run(r, open('_build/natural-runs/NAME.jsonl', 'w'))"

Run: ``PYTHONPATH=$PWD python bench/natural_ladder.py`` (reads ``_build/natural-runs/*.jsonl``, the logs of RUNS).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "_build" / "natural-runs"
OUT = ROOT / "lib" / "data" / "natural_ladder.json"
TOKENS_PER_STEP = 8 * 127  # batch 8 x context 128, the last position has no target

RUNS = {
    "width 128, lr 5e-3": (
        "w128_lr5e-3_long.jsonl",
        {"width": 128, "heads": 4, "d_head": 32, "lr": 5e-3, "stopped": "at its budget of 88,000 steps"},
    ),
    "width 128, lr 1e-2": (
        "w128_lr1e-2.jsonl",
        {"width": 128, "heads": 4, "d_head": 32, "lr": 1e-2, "stopped": "by hand: the loss spiked and no circuit grew"},
    ),
    "width 256, lr 3e-3": (
        "w256_lr3e-3.jsonl",
        {"width": 256, "heads": 8, "d_head": 32, "lr": 3e-3, "stopped": "by hand, when the time for it ran out"},
    ),
}
"""name -> (log file in LOGS, settings); every run: 2 layers, no LayerNorm, shortformer positions, batch 8 x context
128, AdamW, 200 warm-up steps, gradient norm clipped at 1, seed 0."""


def main() -> None:
    runs = {}
    for name, (log, settings) in RUNS.items():
        lines = [json.loads(line) for line in (LOGS / log).read_text().splitlines()]
        runs[name] = {
            "settings": {**settings, "batch": 8, "context": 128, "seed": 0},
            "tokens_M": [round(e["step"] * TOKENS_PER_STEP / 1e6, 3) for e in lines],
            "held_loss": [round(e["held_loss"], 4) for e in lines],
            "prefix_matching": [round(e["best_layer1_pm"], 4) for e in lines],
            "previous_token": [round(max(e["prev_token"][0]), 4) for e in lines],
            "copies": [[round(e["repeat_first"], 3), round(e["repeat_second"], 3)] for e in lines],
        }
        print(f"{name}: {lines[-1]['step']} steps, {runs[name]['tokens_M'][-1]} M tokens")
    OUT.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
