"""Train chapter 8's attention-only models on the Python corpus (lib.induction.natural) and save them.

    python scripts/train_natural.py --tag NAME [--layers 2] [--lr 1e-3] ... [--keep STEPS] --out FILE

Writes a :class:`lib.induction.natural.runs.Run` to FILE (``lib.induction.natural.runs.save_run``): the settings, the
loss of every step, quick measurements every ``--every`` steps (prefix matching of every head on repeated random tokens
and repeated held-out passages, previous-token scores, held-out loss by position) and the checkpoints of the steps in
``--keep`` (default: all), in float16. ``--max-seconds`` shortens the run to what fits (a sweep); the learning rate is
constant after warm-up, so a shorter run is exactly the start of a longer one.

The three runs shipped in lib/data were trained on one H200 GPU: the one-layer runs in the sweep of
bench/natural_sweep.sh (tags L1_lr1e-3 and L1s_lr1e-3), the two-layer run alone (tag L2_lr3e-3), each with
``--max-seconds``, which fixed its number of steps. These commands (``--device cuda``) train the same runs; the
shipped files keep the listed checkpoints (written from the sweep's output with
``lib.induction.natural.runs.save_run``)::

    --tag L2_lr3e-3 --layers 2 --lr 3e-3 --warmup 500 --every 250 --steps 18250 --keep 3000,9000,18250
    --tag L1_lr1e-3 --layers 1 --lr 1e-3 --warmup 200 --every 100 --steps 9400 --keep 9400
    --tag L1s_lr1e-3 --layers 1 --smeared --lr 1e-3 --warmup 200 --every 100 --steps 10100 \\
        --keep 1600,2100,2700,10100

(batches of 64 windows of 256 tokens, seed 0; bench/README.md has the sweep that chose them). On this 2-core CPU a
step of the two-layer model takes about a second, so a full re-run needs a GPU; tests/induction/test_natural.py re-runs
the first steps on the CPU and matches the shipped losses.

Issue 29's runs (:mod:`lib.induction.natural.recipes`: B1, B2, A, on the slim model of
:mod:`lib.induction.natural.slim`) go by name, logging a JSON line every 100 steps to ``--log``::

    python scripts/train_natural.py --recipe B1 --log _build/natural-runs/B1.jsonl --out _build/natural-runs/B1.pt

``--steps 20 --limit 2000000`` is the dry run: 20 steps on the first 2 M characters of the training text.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lib.core.device import clock, pick_device  # noqa: E402
from lib.core.train import TrainConfig, make_optimizer, train  # noqa: E402
from lib.induction import models, scores  # noqa: E402
from lib.induction.natural import corpus, probes, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default=None, help="a named run of lib.induction.natural.recipes (B1, B2, A)")
    parser.add_argument("--log", type=Path, default=None, help="--recipe: the JSON-lines log to write")
    parser.add_argument("--limit", type=int, default=None, help="--recipe: train on this many characters (dry run)")
    parser.add_argument("--tag", default=None, help="the run's label (required without --recipe)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--layer-norm", action="store_true")
    parser.add_argument("--smeared", action="store_true")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=None, help="default 4000, or the recipe's")
    parser.add_argument("--every", type=int, default=100, help="checkpoint interval")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=0.0, help="shorten the run to fit (0: no limit)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--keep", default="", help="comma-separated checkpoint steps to write (default: all)")
    parser.add_argument("--out", type=Path, required=True, help="the file to write")
    args = parser.parse_args()
    device = pick_device(args.device)
    if args.recipe is not None:
        run_recipe(args, device)
        return
    if args.tag is None:
        parser.error("--tag is required without --recipe")
    config = runs.NaturalConfig(
        n_layers=args.layers,
        n_heads=args.heads,
        d_model=args.d_model,
        d_head=args.d_model // args.heads,
        seq_len=args.seq_len,
        layer_norm=args.layer_norm,
        smeared=args.smeared,
    )
    ids = corpus.training_ids()
    probe = probes.probe_tokens(args.seq_len, device)
    model = runs.make_model(config, seed=args.seed, device=device)
    make_batch = corpus.batch_fn(ids.to(device), args.seq_len, seed=args.seed)
    steps = 4000 if args.steps is None else args.steps
    if args.max_seconds:
        # time 20 steps on a throw-away copy, then keep the checkpoints that fit
        trial = copy.deepcopy(model)
        opt = make_optimizer(trial.parameters(), TrainConfig(lr=args.lr))
        trial_batch = corpus.batch_fn(ids.to(device), args.seq_len, seed=999)
        for i in range(25):
            if i == 5:
                start = clock(device)  # once the 5 warm-up steps have run
            loss = scores.per_token_loss(trial, trial_batch(args.batch, None)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        per_step = (clock(device) - start) / 20
        steps = min(steps, max(args.every, int(args.max_seconds / (per_step * 1.15)) // args.every * args.every))
        print(f"{args.tag}: {per_step * 1e3:.1f} ms/step -> {steps} steps", flush=True)
        del trial, opt
    train_config = TrainConfig(
        steps=steps,
        lr=args.lr,
        batch_size=args.batch,
        weight_decay=args.weight_decay,
        warmup_steps=args.warmup,
        checkpoint_steps=tuple(range(0, steps + 1, args.every)),
        seed=args.seed,
        desc=args.tag,
        progress=False,
    )
    history = train(model, make_batch, models.training_loss, train_config, evaluate=lambda m: probes.measure(m, probe))
    best = max(max(max(layer) for layer in e.rand_repeat_pm) for e in history.evals.values())
    print(f"{args.tag}: {steps} steps in {history.seconds:.0f} s; max prefix matching (random) {best:.2f}", flush=True)
    keep = [int(k) for k in args.keep.split(",")] if args.keep else sorted(history.checkpoints)
    run = runs.Run(
        config=config,
        train=dataclasses.replace(train_config, checkpoint_steps=()),
        device=str(device),
        seconds=history.seconds,
        loss=history.loss,
        log=dict(history.evals),
        checkpoints={s: history.checkpoints[s] for s in keep},
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs.save_run(args.out, run)


def run_recipe(args: argparse.Namespace, device: torch.device) -> None:
    """Train ``args.recipe`` (see the module docstring), then write its loss, log and checkpoints to ``args.out``."""
    from lib.induction.natural import recipes

    log_path = args.log or args.out.with_suffix(".jsonl")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        result = recipes.run(args.recipe, log, device=device, steps=args.steps, limit=args.limit)
    print(
        f"{args.recipe}: {len(result['loss'])} steps in {result['seconds']:.0f} s on {device}, "
        f"{result['tokens_per_second']:,.0f} tokens/s; log {log_path}",
        flush=True,
    )
    keep = [int(k) for k in args.keep.split(",")] if args.keep else sorted(result["checkpoints"])
    result["checkpoints"] = {
        s: {k: v.detach().to("cpu", torch.float16) for k, v in result["checkpoints"][s].items()} for s in keep
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(result, args.out)


if __name__ == "__main__":
    main()
