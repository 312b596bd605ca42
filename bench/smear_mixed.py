"""Chapter 6's intervention on chapter 7's mixed task: does the smear make in-context learning, or only the repeat?

On chapter 6's repeated-sequence data every late token is a repeat, so "the smear makes the repeat learnable" and "the
smear makes in-context learning" cannot be told apart. The mixed task (``lib.induction.mixed``) has a second source of
in-context information that needs no induction (each sequence's own unigram distribution), and its ICL score is split
into late repeated and late non-repeated positions (``mixed.icl_by_kind``, late minus early loss; negative = ICL).

For each seed, a plain and a smeared one-layer model (chapter 6's width: 4 heads of 16, ``d_model`` 64; chapter 6's
optimiser settings, lr 3e-3 and batch 32) are trained from the same initial weights on the same batches of the mixed
task for 600 steps; both ICL scores are measured every 50 steps on 256 fixed evaluation sequences; at the end the
smeared model is measured again with its smear switched off (every other weight unchanged), and its ``sigma(alpha)``
recorded; the final early and late losses of both arms are kept beside the scores. Chapter 6 reads the JSON this
writes (``lib/data/smear_mixed.json``, ``smear.load_mixed_bench``).

Every model trains on :func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses) with the CPU's data (batches and
evaluation sequences drawn on the CPU and moved); the JSON's settings record the device, since each arm's seconds
depend on it.

Run: ``PYTHONPATH=$PWD OMP_NUM_THREADS=1 python bench/smear_mixed.py [--seeds 0 1 2 3 4] [--json PATH]``
(both arms of a seed took 25-35 s on one core of the 2-core CPU with other jobs running).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import torch

from lib.core.device import clock, pick_device
from lib.induction import mixed, scores, smear

STEPS = 600
TRAINING = replace(
    smear.TRAINING, steps=STEPS, checkpoint_steps=tuple(range(0, STEPS + 1, 50)), progress=False, desc="mixed"
)
N_HEADS, N_EVAL = 4, 256
ARMS = {"1 layer": False, "1 layer, smeared": True}


def run_seed(seed: int, device: torch.device) -> dict:
    """Both arms of one seed on ``device``: ICL curves by kind, and the smeared model's final ICL without its smear
    and sigma."""
    config = mixed.MixedConfig()
    data = mixed.eval_batch(config, device, n=N_EVAL)
    found: dict = {}
    for arm, smeared in ARMS.items():
        start = clock(device)
        model, history = mixed.train_model(
            config,
            seed,
            n_heads=N_HEADS,
            n_layers=1,
            smeared=smeared,
            train_config=TRAINING,
            evaluate=lambda m: mixed.icl_of(m, data, config),
            device=device,
        )
        found[arm] = {
            "seconds": clock(device) - start,
            "icl": {kind: [history.evals[s][kind] for s in history.checkpoint_steps] for kind in mixed.POSITION_KINDS},
        }
        with torch.inference_mode():  # the two terms of the last ICL scores: a worse late or a better early loss?
            terms = mixed.loss_terms(scores.per_token_loss(model, data.tokens), data, config)
        found[arm]["final losses"] = {where: float(v) for where, v in terms.items()}
        if smeared:
            with smear.smear_disabled(model):
                found[arm]["icl without the smear"] = mixed.icl_of(model, data, config)
            found[arm]["sigma"] = smear.smear_sigma(model)[0].tolist()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--json", type=Path, default=smear.MIXED_BENCH_PATH)
    args = parser.parse_args()
    device = pick_device()
    print(f"device {device}", flush=True)
    runs = {}
    for seed in args.seeds:
        runs[str(seed)] = run_seed(seed, device)
        last = {arm: {k: round(v[-1], 3) for k, v in r["icl"].items()} for arm, r in runs[str(seed)].items()}
        off = {k: round(v, 3) for k, v in runs[str(seed)]["1 layer, smeared"]["icl without the smear"].items()}
        print(f"seed {seed}: final ICL {last}; smeared without its smear {off}", flush=True)
    settings = {
        "task": "mixed.MixedConfig()",
        "n_heads": N_HEADS,
        "n_layers": 1,
        "lr": TRAINING.lr,
        "batch_size": TRAINING.batch_size,
        "eval sequences": N_EVAL,
        "device": str(device),
    }
    result = {"settings": settings, "steps": list(TRAINING.checkpoint_steps), "runs": runs}
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
