"""Chapter 5's dating of the mixed task on three seeds (issue 38): is the shipped seed typical?

Chapter 5 dates three curves of chapter 7's mixed-task run (``lib.induction.mixed``: the two-layer model with 8
heads a layer, :data:`lib.induction.mixed.TRAINING`, a checkpoint every 100 steps): the ICL on late repeated and on
late non-repeated positions, and the layer-1 prefix matching of the two heads that end highest on it
(:func:`lib.induction.mixed.dating_curves`). The book ships one run, seed 1, because it is the only seed of 0-2 in
which a minority of induction-like heads forms (``bench/README.md``, ``ablation_sweep.py``). This script trains seeds
0 and 2 (about 3-7 minutes each on one CPU thread), reads seed 1 from the shipped run, rounds every checkpoint to
float16 as the shipped one is, measures the three curves on the chapter's evaluation sets (the book's seeds), and
writes them to ``lib/data/mixed_dating.json``, which chapter 5 loads to show the three seeds side by side.

Run: ``PYTHONPATH=$PWD OMP_NUM_THREADS=1 python bench/mixed_dating.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from lib.core.device import pick_device
from lib.induction import mixed, sequences

OUT = Path(__file__).resolve().parent.parent / "lib" / "data" / "mixed_dating.json"
SEEDS = (0, 1, 2)


def main() -> None:
    device = pick_device()
    config = mixed.MixedConfig()
    data = mixed.eval_batch(config, device, n=128)
    prefix_tokens = sequences.eval_sets(config.model_config(8), device).prefix_tokens[:64]
    out: dict[str, object] = {"seeds": {}}
    for seed in SEEDS:
        if mixed.run_path(seed) == mixed.SHIPPED:
            run = mixed.load_run()
        else:
            model, history = mixed.train_model(config, seed, device=device)
            halves = {s: {k: v.half() for k, v in state.items()} for s, state in history.checkpoints.items()}
            run = mixed.Run(config, model.cfg.n_heads, seed, history.seconds, halves)
        steps, curves, pair = mixed.dating_curves(run, data, prefix_tokens, device)
        out["steps"] = steps
        out["seeds"][str(seed)] = {  # type: ignore[index]
            "pair": pair.tolist(),
            **{name: [round(x, 5) for x in curve.tolist()] for name, curve in curves.items()},
        }
        print(seed, pair.tolist(), {n: [round(x, 2) for x in c.tolist()] for n, c in curves.items()}, flush=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
