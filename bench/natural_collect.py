"""Gather a natural-text sweep (scripts/train_natural.py outputs in one folder) into a summary and checkpoint packs.

    python bench/natural_collect.py SWEEP_DIR OUT_DIR

Writes OUT_DIR/summary.json (every run's settings, loss curve every 10 steps and measurements, positions binned by
16) and, for the run with the highest prefix-matching score and its one-layer companions, its checkpoints in
files of at most 15 MB each.
"""

import json
import sys
from pathlib import Path

import torch

src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
runs = {p.stem: torch.load(p, weights_only=False) for p in sorted(src.glob("*.pt"))}


def best_pm(run: dict) -> float:
    return max(max(max(layer) for layer in e["rand_repeat_pm"]) for e in run["evals"].values())


summary = {}
for tag, run in runs.items():
    loss = run["loss"]
    evals = {}
    for step, e in run["evals"].items():
        e = dict(e)
        by_pos = torch.tensor(e.pop("loss_by_pos"))
        e["loss_by_pos16"] = [by_pos[i : i + 16].mean().item() for i in range(0, len(by_pos), 16)]
        e["loss_pos"] = {str(p): by_pos[p].item() for p in (10, 20, 30, 50, 100, 150, 200, 250) if p < len(by_pos)}
        evals[step] = e
    summary[tag] = {
        "config": run["config"],
        "train_config": run["train_config"],
        "seconds": run["seconds"],
        "device": run["device"],
        "loss10": loss.view(-1, 10).mean(1).tolist() if len(loss) % 10 == 0 else loss.tolist(),
        "evals": evals,
        "best_pm": best_pm(run),
    }
    print(
        f"{tag}: steps {run['train_config']['steps']}, {run['seconds']:.0f} s, best prefix matching {best_pm(run):.2f}"
    )
(out / "summary.json").write_text(json.dumps(summary))


def pack(tag: str, n_files: int) -> None:
    run = runs[tag]
    steps = sorted(run["checkpoints"])
    size = sum(v.numel() * 2 for v in run["checkpoints"][steps[0]].values())
    per_file = max(1, int(15e6 // size))
    keep_n = min(len(steps), per_file * n_files)
    idx = torch.linspace(0, len(steps) - 1, keep_n).round().long().unique().tolist()
    keep = [steps[i] for i in idx]
    for f in range(n_files):
        chunk = keep[f * per_file : (f + 1) * per_file]
        if chunk:
            extra = (
                {"loss": run["loss"], "config": run["config"], "train_config": run["train_config"]} if f == 0 else {}
            )
            torch.save({"checkpoints": {s: run["checkpoints"][s] for s in chunk}, **extra}, out / f"{tag}.{f}.pt")


two = [t for t in runs if runs[t]["config"]["n_layers"] == 2]
ranked = sorted(two, key=lambda t: best_pm(runs[t]), reverse=True)
if ranked:
    pack(ranked[0], 3)
    best = runs[ranked[0]]
    for t, r in runs.items():  # its one-layer companions: same learning rate and LayerNorm
        same = (
            r["train_config"]["lr"] == best["train_config"]["lr"]
            and r["config"]["layer_norm"] == best["config"]["layer_norm"]
        )
        if r["config"]["n_layers"] == 1 and same:
            pack(t, 1)
    print("packed", ranked[0])
