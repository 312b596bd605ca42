"""Induction heads across model sizes, batch sizes and context lengths (chapter 10; Olsson et al.'s argument 6,
Aoyama et al. 2025's onset law).

Trains a family of attention-only models on chapter 5's repeated-random-token task with chapter 5's training
(AdamW, lr 3e-3, no warm-up; :mod:`lib.induction.sizes`), three seeds each, and records every 20 steps the loss on
repeated tokens, the ICL score and each layer's best prefix-matching and previous-token head, then the induction
heads at the end and at step 0. Two families:

- **sizes** (batch 32, context 49, 600 steps as chapter 5): one layer at width 64 (the control), two layers at
  widths 64, 128 and 256 (4, 8 and 16 heads; 500 steps at width 256, the slowest), three and four layers at
  width 64 (800 and 900 steps: their phase change comes later);
- **batches** (two layers, width 64): batch 8 (1,000 steps), 16 (800), 32 (the sizes' two-layer model) and 64 (600)
  at context 49, and batch 16 at context 97 (800 steps), whose B x C matches batch 32 at context 49 with another B
  and C.

It writes ``lib/data/size_family.json`` after every run (partial results survive), skipping runs already there,
so a second call resumes. Run: ``PYTHONPATH=$PWD OMP_NUM_THREADS=1 nohup nice -n 5 python bench/size_family.py
> /tmp/size_family.log 2>&1 &`` (32 minutes of training on one CPU core shared with other jobs).
Results: bench/README.md.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch

from lib.core.device import pick_device
from lib.induction.sizes import Member, onset, train_member

OUT = Path(__file__).resolve().parent.parent / "lib" / "data" / "size_family.json"
SEEDS = (0, 1, 2)
EVERY = 20
SIZES = {
    "1L d64": Member(n_layers=1, d_model=64),
    "2L d64": Member(n_layers=2, d_model=64),
    "3L d64": Member(n_layers=3, d_model=64, steps=800),
    "4L d64": Member(n_layers=4, d_model=64, steps=900),
    "2L d128": Member(n_layers=2, d_model=128),
    "2L d256": Member(n_layers=2, d_model=256, steps=500),
}
BATCHES = {
    "B8 C49": Member(batch_size=8, steps=1000),
    "B16 C49": Member(batch_size=16, steps=800),
    "B64 C49": Member(batch_size=64),
    "B16 C97": Member(batch_size=16, seq_len=97, steps=800),
}
"""Batch 32 at context 49 is the sizes family's "2L d64"."""


def main() -> None:
    torch.set_num_threads(1)
    device = pick_device()
    out = json.loads(OUT.read_text()) if OUT.is_file() else {}
    out.update(seeds=list(SEEDS), every=EVERY, device=str(device))
    runs = out.setdefault("runs", {})
    members = {**SIZES, **BATCHES}
    order = [name for name in members if name != "2L d256"] + ["2L d256"]  # the slowest last
    out["members"] = {name: asdict(member) for name, member in members.items()}
    # every member's seed 0 first, then seed 1, then seed 2: a partial file covers the whole family
    for seed in SEEDS:
        for name in order:
            member = members[name]
            key = f"{name} seed {seed}"
            if key in runs:
                continue
            run = train_member(member, seed, every=EVERY, device=device)
            runs[key] = {k: _rounded(v) for k, v in run.items()}
            found = onset(run, member)
            print(
                f"{key}: phase change {found.step} window {found.window} heads {run['heads']} ({run['seconds']:.0f} s)",
                flush=True,
            )
            OUT.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}")


def _rounded(value: object) -> object:
    """Floats to 4 decimals, in lists too (a smaller file)."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


if __name__ == "__main__":
    main()
