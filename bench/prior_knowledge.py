"""Chapter 4's prior-knowledge experiment on more seeds than the chapter can afford.

    PYTHONPATH=$PWD python bench/prior_knowledge.py [--seeds 10] [--steps 250] [--lr 5e-3] [--replay] [--crossover]
        [--json FILE] [--threads 1]

Runs :func:`lib.ocr.prior.run_prior_knowledge` with the chapter's settings (:class:`lib.ocr.prior.PriorExperiment`'s
defaults; ``--steps`` changes the fine-tuning length, ``--lr`` its learning rate) on seeds ``0 .. seeds-1`` and prints,
per arm (start x fine-tuned rule), the final held-out measures with 95% Student-t intervals over the seeds and the
paired differences pre-trained minus each other start. ``--json`` writes them for chapter 4, with every seed's curves
(``"per seed"``), from which the chapter computes its ten-seed tables; it runs seeds 0-2 of the same experiment live.

The JSON files the chapter loads, all from this script on the 2-core CPU with one torch thread (2026-12-03):

- ``lib/data/prior_knowledge.json``: ``--seeds 10 --crossover`` (the chapter's settings, 250 steps; about 2 minutes);
- ``lib/data/prior_knowledge_steps600.json``: ``--seeds 10 --steps 600`` (about 2.5 minutes);
- ``lib/data/prior_knowledge_lr1e-3.json``: ``--seeds 10 --lr 1e-3``; ``prior_knowledge_replay.json``: ``--seeds 10
  --replay``; ``prior_knowledge_lr2e-3.json`` and ``prior_knowledge_lr1e-2.json``: ``--seeds 5 --lr 2e-3`` and
  ``--lr 1e-2``.

Every seed runs on :func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses; lib draws the batches on the
CPU), and the device is printed. Re-running a command on the same machine gives the same numbers (checked on seed 0);
an earlier set, written before the per-seed curves were recorded, differed from these in the second decimal (written
by an earlier commit, perhaps on another machine: not traced).
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import torch

from lib.core.device import clock, pick_device
from lib.ocr import prior


def paired_interval(values: torch.Tensor) -> list[float]:
    """Mean of ``values`` (one per seed) and its two-sided 95% Student-t interval: ``[mean, low, high]``."""
    if len(values) < 2:
        return [float(values.mean())] * 3
    return list(prior.seed_interval(values))


def run(
    n_seeds: int = 10,
    steps: int | None = None,
    lr: float | None = None,
    json_path: str | None = None,
    replay: bool = False,
    crossover: bool = False,
) -> dict:
    """Held-out measures of every arm over ``n_seeds`` seeds (bench/run_all.py's interface).

    Per arm (start x fine-tuned rule) and step: the held-out mean rank of the fine-tuned rule's answer, the share of
    held-out questions on which it is ranked first, the share on which the counterfactual answer scores above the
    true one, and after fine-tuning the known people's mean rank (retention). Pre-trained minus from scratch is
    paired by seed. ``crossover`` adds the crossover control's arms (pre-trained on the same people and templates
    under :data:`lib.ocr.prior.CROSSOVER`, a third rule) and the paired differences pre-trained minus crossover.
    ``json_path`` writes all of it (means and 95% intervals over seeds) for chapter 4.
    """
    experiment = prior.PriorExperiment()
    fine_tune = experiment.fine_tune
    if steps is not None:
        fine_tune = dataclasses.replace(
            fine_tune, steps=steps, checkpoint_steps=tuple(s for s in experiment.eval_steps if s < steps)
        )
    if lr is not None:
        fine_tune = dataclasses.replace(fine_tune, lr=lr)
    data = dataclasses.replace(experiment.data, crossover=prior.CROSSOVER if crossover else None)
    experiment = dataclasses.replace(experiment, data=data, fine_tune=fine_tune, replay=replay)
    device = pick_device()
    start = clock(device)
    runs = [prior.run_prior_knowledge(experiment, seed, device) for seed in range(n_seeds)]
    true = experiment.data.world_rule.name
    (cf,) = [r.name for r in experiment.data.rules if r.link == "counterfactual"]
    t_i, c_i = runs[0].rules.index(true), runs[0].rules.index(cf)
    out: dict = {
        "device": str(device),
        "seeds": n_seeds,
        "fine-tuning steps": fine_tune.steps,
        "fine-tuning lr": fine_tune.lr,
        "replay": replay,
        "crossover": crossover,
    }
    curves: dict = {"steps": list(runs[0].steps), "arms": {}}
    per_seed: dict = {}  # the same measures, seed by seed: (seeds, steps) lists, and one retention per seed
    for init in runs[0].inits:
        for rule in (true, cf):
            k = rule == cf
            measures = {
                "mean rank": torch.stack([r.held_out[init, rule][:, c_i if k else t_i] for r in runs]),
                "top-1": torch.stack([r.top1[init, rule][:, c_i if k else t_i] for r in runs]),
                "P(counterfactual above true)": torch.stack([r.above_world[init, rule][:, c_i] for r in runs]),
                "true answer's mean rank": torch.stack([r.held_out[init, rule][:, t_i] for r in runs]),
            }  # each (seeds, steps)
            label = f"{init}, fine-tuned on {rule}"
            curves["arms"][label] = {
                name: [paired_interval(v[:, j]) for j in range(v.shape[1])] for name, v in measures.items()
            }
            retention = torch.tensor([r.world_after_fine_tuning[init, rule] for r in runs])
            curves["arms"][label]["known people's mean rank after fine-tuning"] = paired_interval(retention)
            per_seed[label] = {name: v.tolist() for name, v in measures.items()}
            per_seed[label]["known people's mean rank after fine-tuning"] = retention.tolist()
            for name, v in measures.items():
                m, lo, hi = paired_interval(v[:, -1])
                out[f"{label}: {name}"] = f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
            m, lo, hi = paired_interval(retention)
            out[f"{label}: known people's mean rank after fine-tuning"] = f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
    getters = {
        "mean rank of the counterfactual answer": lambda r, i: r.held_out[i, cf][-1, c_i],
        "top-1 of the counterfactual answer": lambda r, i: r.top1[i, cf][-1, c_i],
        "P(counterfactual above true)": lambda r, i: r.above_world[i, cf][-1, c_i],
        "true-rule runs: mean rank of the true answer": lambda r, i: r.held_out[i, true][-1, t_i],
        "true-rule runs: top-1 of the true answer": lambda r, i: r.top1[i, true][-1, t_i],
    }
    all_differences = {}
    for other in runs[0].inits[1:]:
        differences = {}
        for name, getter in getters.items():
            d = torch.tensor([float(getter(r, "pre-trained") - getter(r, other)) for r in runs])
            differences[name] = paired_interval(d)
            m, lo, hi = differences[name]
            out[f"pre-trained minus {other}: {name}"] = f"{m:.2f} [{lo:.2f}, {hi:.2f}]"
        all_differences[f"paired differences (pre-trained - {other}), final"] = differences
    out["known people's mean rank after pre-training (max over seeds)"] = max(r.world_after_pretraining for r in runs)
    if crossover:
        out["known people's crossover-rule mean rank after crossover pre-training (max over seeds)"] = max(
            r.crossover_after_pretraining for r in runs
        )
    out["chance"] = (len(experiment.data.world_rule.fact_values) - 1) / 2
    out["seconds"] = clock(device) - start
    if json_path is not None:
        payload = {
            "settings": {
                k: out[k] for k in ("seeds", "fine-tuning steps", "fine-tuning lr", "replay", "crossover", "chance")
            },
            "curves": curves,
            "per seed": {"seeds": list(range(n_seeds)), "steps": curves["steps"], "arms": per_seed},
            **all_differences,
            "known people after pre-training": [r.world_after_pretraining for r in runs],
        }
        if crossover:
            payload["known people after crossover pre-training"] = [r.crossover_after_pretraining for r in runs]
        with open(json_path, "w") as f:
            json.dump(payload, f, indent=1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=None, help="fine-tuning steps (default: the chapter's)")
    parser.add_argument("--lr", type=float, default=None, help="fine-tuning learning rate (default: the chapter's)")
    parser.add_argument("--replay", action="store_true", help="mix pre-training sentences into fine-tuning")
    parser.add_argument("--crossover", action="store_true", help="add the crossover control (a third rule pre-trained)")
    parser.add_argument("--json", default=None, help="write the curves and intervals to this JSON file")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for key, value in run(args.seeds, args.steps, args.lr, args.json, args.replay, args.crossover).items():
        print(f"{key}: {value:.2f}" if isinstance(value, float) and key != "fine-tuning lr" else f"{key}: {value}")


if __name__ == "__main__":
    main()
