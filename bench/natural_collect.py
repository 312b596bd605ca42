"""Gather a natural-text sweep (the runs ``scripts/train_natural.py`` wrote into one folder) into a summary.

    python bench/natural_collect.py SWEEP_DIR OUT_DIR

Writes OUT_DIR/summary.json: every run's settings, its training loss averaged over every 10 steps and its log
(:class:`lib.induction.natural.probes.Measurement` fields, as saved), and prints each run's highest prefix-matching
score on repeated random tokens. The runs themselves (``lib.induction.natural.runs.save_run`` files) are what to copy to
lib/data when one is chosen.
"""

import json
import sys
from pathlib import Path

import torch

src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
summary = {}
for path in sorted(src.glob("*.pt")):
    run = torch.load(path, map_location="cpu", weights_only=True)  # a GPU sweep's files, read anywhere
    best = max(max(max(layer) for layer in entry["rand_repeat_pm"]) for entry in run["log"].values())
    loss = run["loss"]
    summary[path.stem] = {
        "config": run["config"],
        "train": run["train"],
        "seconds": run["seconds"],
        "device": run["device"],
        "loss10": loss[: len(loss) // 10 * 10].view(-1, 10).mean(1).tolist(),
        "log": run["log"],
        "best_pm": best,
    }
    print(f"{path.stem}: {run['train']['steps']} steps in {run['seconds']:.0f} s, best prefix matching {best:.2f}")
(out / "summary.json").write_text(json.dumps(summary))
