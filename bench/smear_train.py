"""Chapter 6's four arms (1 and 2 layers, plain and smeared keys): wall time and phase-change step per arm.

For each arm, three seeds are trained one after another with the chapter's settings
(``lib.induction.smear.arm_training``: lr 3e-3, batch 32, 500 steps for the plain arms and 300 for the smeared ones,
``lib.induction.smear.ARM_STEPS``; the loss on repeated tokens measured every 10 steps on the chapter's 32 evaluation
sequences). The phase change is the book's phase-change step (``lib.induction.dynamics.phase_change_step``): the first
checkpoint with that loss below
``lib.induction.dynamics.PHASE_CHANGE_LOSS`` (1 nat).

Then the initialisation of the smear: the smeared arms again, for 400 steps (``lib.induction.smear.TRAINING``), with
every head starting at ``sigma(alpha)`` 0.88 (``alpha = 2``, close to a plain model) and 0.12 (``alpha = -2``, close to
"previous key only") instead of the chapter's 0.5. Chapter 6 cites these results.

Every arm trains on :func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses) with the CPU's data.
Run: ``PYTHONPATH=$PWD OMP_NUM_THREADS=1 python bench/smear_train.py`` (``bench/run_all.py`` calls :func:`run`).
"""

from __future__ import annotations

import os
import statistics
from dataclasses import replace

import torch
from torch import nn

from lib.core.device import clock, pick_device
from lib.core.train import TrainConfig
from lib.induction import dynamics, scores, sequences, smear

SEEDS = (0, 1, 2)
OTHER_INITS = {"sigma0 0.88": 2.0, "sigma0 0.12": -2.0}


def train_arm(
    n_layers: int,
    smeared: bool,
    alpha: float = smear.INIT_ALPHA,
    seeds: tuple[int, ...] = SEEDS,
    train_config: TrainConfig = smear.TRAINING,
) -> dict:
    """Train one arm over ``seeds``; wall time, phase-change steps and (smeared) the final mean sigma(alpha)."""
    device = pick_device()
    config = sequences.InductionConfig().with_layers(n_layers)
    sets = sequences.eval_sets(config, device, n=32)

    def repeated_loss(model: nn.Module) -> torch.Tensor:
        return scores.masked_mean(scores.per_token_loss(model, sets.tokens), sets.mask)

    found, sigmas, seconds = [], [], 0.0
    for seed in seeds:
        start = clock(device)
        model, history = smear.train_model(
            config,
            seed,
            smeared=smeared,
            alpha=alpha,
            train_config=replace(train_config, progress=False),
            evaluate=repeated_loss,
            device=device,
        )
        seconds += clock(device) - start  # includes building the model (a few ms)
        steps = history.checkpoint_steps
        found.append(dynamics.phase_change_step(steps, [history.evals[s] for s in steps]))
        if smeared:
            sigmas.append(smear.smear_sigma(model).mean().item())
    reached = [s for s in found if s is not None]
    result = {
        "seconds": round(seconds, 2),
        "steps/s": round(len(seeds) * train_config.steps / seconds, 1),
        "phase-change steps": " ".join("never" if s is None else str(s) for s in found),
        "phase-change mean": round(statistics.mean(reached), 1) if len(reached) == len(found) else "not every seed",
    }
    if smeared:
        result["final mean sigma"] = round(statistics.mean(sigmas), 3)
    return result


def run() -> dict:
    """The numbers, flat, ready for ``bench/run_all.py``."""
    numbers: dict = {
        "device": str(pick_device()),
        "torch threads": torch.get_num_threads(),
        "load average at start": round(os.getloadavg()[0], 2),
    }
    for arm, (n_layers, smeared) in smear.ARMS.items():
        for key, value in train_arm(n_layers, smeared, train_config=smear.arm_training(arm)).items():
            numbers[f"{arm} (3 seeds, {smear.ARM_STEPS[arm]} steps): {key}"] = value
    for name, alpha in OTHER_INITS.items():
        for arm in ("1 layer, smeared", "2 layers, smeared"):
            result = train_arm(smear.ARMS[arm][0], True, alpha)
            for key in ("phase-change steps", "final mean sigma"):
                numbers[f"{arm}, {name}: {key}"] = result[key]
    numbers["load average at end"] = round(os.getloadavg()[0], 2)
    return numbers


if __name__ == "__main__":
    for key, value in run().items():
        print(f"{key:<55} {value}")
