"""Chapter 9's runs: fuzzy induction on a two-language task, on several seeds, with its two controls.

For each seed it trains, on :mod:`lib.induction.fuzzy`'s task (:data:`lib.induction.fuzzy.TRAINING`: chapter 5's
settings, 2,500 steps):

- **fuzzy**: chapter 5's two-layer attention-only model on the task (half the sequences translated repeats);
- **exact only**: the same model on the same vocabulary, every repeat exact (``translated_share=0``): it never sees a
  translation, so its induction heads must not match across languages (the control);
- **one layer**: a one-layer model on the task, which cannot form an induction circuit (the other control);

and logs, at every checkpoint (every 50 steps), the loss on exact and on translated repeats and every head's
cross-language and same-language prefix matching (:func:`lib.induction.fuzzy.head_measures`, on the task's evaluation
sets for all three models), then at the end every head's OV shares and the loss with each head removed. The seed is
the book's seed (weights and batches); the evaluation sets are drawn from the shipped evaluation seed.

Run: ``PYTHONPATH=$PWD nice -n 5 python bench/fuzzy_train.py --seeds 0 1 2 3 --json lib/data/fuzzy_runs.json
--save lib/data/fuzzy-seed0.pt`` (``--save`` writes the first seed's models at a few checkpoints, float16).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from lib.core.device import pick_device
from lib.induction import dynamics, fuzzy

KINDS = {
    "fuzzy": fuzzy.FuzzyConfig(),
    "exact only": replace(fuzzy.FuzzyConfig(), translated_share=0.0),
    "one layer": fuzzy.FuzzyConfig().with_layers(1),
}
SAVED_STEPS = (0, 250, 500, 750, 1000, 1250, 1500, 2000, 2500)  # the fuzzy run's shipped checkpoints


def run(seed: int, device: torch.device) -> tuple[dict, dict[str, fuzzy.Run]]:
    task = KINDS["fuzzy"]
    sets = fuzzy.eval_sets(task, device)
    translate = fuzzy.translation(task.language)
    log, runs = {}, {}
    for name, config in KINDS.items():
        start = time.perf_counter()
        model, history = fuzzy.train_model(
            config,
            seed,
            train_config=replace(fuzzy.TRAINING, desc=f"seed {seed}, {name}"),
            evaluate=lambda m: fuzzy.head_measures(m, sets, translate),
            device=device,
        )
        model.eval()
        steps = history.checkpoint_steps
        curves = {key: torch.stack([history.evals[s][key] for s in steps]) for key in history.evals[0]}
        shares = fuzzy.ov_shares(model, translate)
        entry = {
            "steps": steps,
            "seconds": time.perf_counter() - start,
            **{key: value.tolist() for key, value in curves.items()},
            "ov translation": shares[0].tolist(),
            "ov copy": shares[1].tolist(),
            "ablation": fuzzy.ablation_effects(model, sets).tolist(),
        }
        log[name] = entry
        keep = SAVED_STEPS if name == "fuzzy" else (0, steps[-1])
        runs[name] = fuzzy.Run(config, seed, {s: history.checkpoints[s] for s in keep})
        layer = config.n_layers - 1
        best = int(curves["cross prefix matching"][-1, layer].argmax())
        onset = dynamics.phase_change_step(steps, curves["translated loss"])
        print(
            f"seed {seed} {name:>10}: {entry['seconds']:.0f} s; loss exact {entry['exact loss'][-1]:.3f}, "
            f"translated {entry['translated loss'][-1]:.3f}; phase change (translated) at {onset}; "
            f"best cross head L{layer}H{best}: cross {curves['cross prefix matching'][-1, layer, best]:.2f}, "
            f"same {curves['prefix matching'][-1, layer, best]:.2f}, OV translation {shares[0, layer, best]:.2f}, "
            f"copy {shares[1, layer, best]:.2f}",
            flush=True,
        )
    return log, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--json", type=Path, help="write every seed's log here")
    parser.add_argument("--save", type=Path, help="write the first seed's models here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = pick_device()
    logs = {}
    for i, seed in enumerate(args.seeds):
        logs[str(seed)], runs = run(seed, device)
        if args.save and i == 0:
            fuzzy.save_runs(args.save, runs)
        if args.json:  # after every seed, so a long run leaves what it has
            settings = {
                "configs": {name: asdict(c) for name, c in KINDS.items()},
                "training": {k: v for k, v in asdict(fuzzy.TRAINING).items() if k != "checkpoint_steps"},
                "device": str(device),
                "made by": "bench/fuzzy_train.py",
            }
            args.json.write_text(json.dumps({"settings": settings, "seeds": logs}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
