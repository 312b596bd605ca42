"""How long does chapter 7's ablation sweep take? Batched ablations vs. one forward pass per ablation.

For chapter 5's two-layer model (d_model 64, 4 heads per layer) and the chapter's sweep (the intact model, every
head alone, the layer-1 heads together and layer 0 together: 11 ablations, on 64 sequences of 49 tokens, both
kinds), it times

- the book: ``lib.induction.ablation.ablated_losses``, all ablations of one kind in one forward pass
  (batch = ablations x sequences; for pattern-preserving ablation one extra pass records the patterns);
- a plain loop: one ``run_with_hooks`` forward pass per ablation (and, for pattern-preserving ablation, one
  recording pass per ablation), as a first implementation would do;

and the whole sweep over the chapter's 31 checkpoints (every 20th step) with ``lib.induction.scores.over_checkpoints``.
Timing does not depend on the weights, so the model is not trained: every checkpoint is the initial one.
Run: ``PYTHONPATH=$PWD python bench/ablation_sweep.py``.

With ``--seeds 0 1 2`` it runs the science sweep instead (issue 27; ``--save`` also writes each seed's run; chapter 7
loads :data:`lib.induction.mixed.SHIPPED`): for each seed it trains the two-layer, 8-heads-per-layer model on
:mod:`lib.induction.mixed`'s task (:data:`lib.induction.mixed.TRAINING`), finds the induction heads by the book's
criteria (:func:`lib.induction.scores.induction_heads`), and prints the share of ICL that ablating them (zero, mean,
resample; full ablation) removes on repeated and non-repeated late positions, beside every set of as many other
layer-1 heads (:func:`lib.induction.mixed.ablation_contrast`), and the per-head key path cuts from every layer-0 head
(:func:`lib.induction.ablation.key_path_cut_losses`). Where no minority of heads meets the criteria, the two layer-1
heads with the highest prefix-matching score stand in, and the output says so.

Both run on :func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses), with data drawn on the CPU and moved;
every clock reading waits for the device's queued work (:func:`lib.core.device.clock`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import torch

from lib.core.device import clock, pick_device
from lib.core.heads import Head, head_name
from lib.core.train import snapshot
from lib.induction import ablation, mixed, models, scores, sequences

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

SEQUENCES = 64
CHECKPOINTS = 31
REPEATS = 3


def _ablations(model: TransformerBridge) -> list[list[Head]]:
    n_heads = model.cfg.n_heads
    return ablation.each_head(model) + [[(1, h) for h in range(n_heads)], [(0, h) for h in range(n_heads)]]


def _plain(
    model: TransformerBridge,
    tokens: torch.Tensor,
    ablations: list[list[Head]],
    kind: ablation.Kind,
) -> torch.Tensor:
    """One forward pass per ablation, with hooks written inline."""
    out = []
    for heads in ablations:
        hooks = []
        if kind == "pattern-preserving":
            _, cache = model.run_with_cache(tokens, names_filter=lambda name: name.endswith("hook_pattern"))
            hooks += [(name, lambda pattern, hook, recorded=cache[name]: recorded) for name in cache.keys()]
        for layer in {layer for layer, _ in heads}:
            dropped = [h for l, h in heads if l == layer]

            def zero(z, hook, dropped=dropped):
                z = z.clone()
                z[:, :, dropped] = 0.0
                return z

            hooks.append((f"blocks.{layer}.attn.hook_z", zero))
        logits = model.run_with_hooks(tokens, fwd_hooks=hooks)
        out.append(scores.next_token_loss(logits, tokens))
    return torch.stack(out)


def _best_time(fn: Callable[[], object], device: torch.device, repeats: int = REPEATS) -> float:
    """The fastest of ``repeats`` calls of ``fn`` (after one warm-up call), each until ``device`` has run its work."""
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = clock(device)
        fn()
        times.append(clock(device) - start)
    return min(times)


def run() -> dict:
    """Seconds per checkpoint (book vs plain loop, both kinds), their ratio, and the whole sweep's seconds."""
    device = pick_device()
    config = sequences.InductionConfig()
    model = models.make_model(config, seed=0, device=device)
    model.eval()
    tokens = sequences.eval_sets(config, device, n=SEQUENCES).tokens
    ablations = _ablations(model)
    results: dict = {
        "device": str(device),
        "torch threads": torch.get_num_threads(),
        "load average (1 min)": round(os.getloadavg()[0], 2),
    }
    book_total = plain_total = 0.0
    with torch.inference_mode():
        for kind in ablation.KINDS:
            book = _best_time(partial(ablation.ablated_losses, model, tokens, ablations, kind), device)
            plain = _best_time(partial(_plain, model, tokens, ablations, kind), device)
            assert torch.allclose(
                ablation.ablated_losses(model, tokens, ablations, kind),
                _plain(model, tokens, ablations, kind),
                atol=1e-5,
            )
            results[f"{kind}: book s/checkpoint"] = round(book, 3)
            results[f"{kind}: plain loop s/checkpoint"] = round(plain, 3)
            results[f"{kind}: speed-up"] = round(plain / book, 2)
            book_total, plain_total = book_total + book, plain_total + plain
    results["both kinds: speed-up"] = round(plain_total / book_total, 2)
    checkpoints = {step: snapshot(model) for step in range(0, 20 * CHECKPOINTS, 20)}
    start = clock(device)
    scores.over_checkpoints(
        model,
        checkpoints,
        lambda m: {kind: ablation.ablated_losses(m, tokens, ablations, kind) for kind in ablation.KINDS},
    )
    results[
        f"chapter sweep ({CHECKPOINTS} checkpoints x {len(ablations)} ablations x {SEQUENCES} sequences x 2 kinds) s"
    ] = round(clock(device) - start, 2)
    results["load average (1 min) at the end"] = round(os.getloadavg()[0], 2)
    return results


def seed_sweep(seed: int, save: bool = False) -> None:
    """Train the mixed-task model of ``seed`` and print its head scores, ablation contrasts and path-cut table.

    With ``save``, the run (every checkpoint) is written to :func:`lib.induction.mixed.run_path` of ``seed``.
    """
    device = pick_device()
    config = mixed.MixedConfig()
    model, history = mixed.train_model(config, seed, device=device)
    model.eval()
    if save:
        run = mixed.Run(config, model.cfg.n_heads, seed, history.seconds, history.checkpoints)
        mixed.save_run(mixed.run_path(seed), run)
        # measure what the chapter loads: the saved, float16-rounded checkpoint (``run`` holds the float32 one)
        model = mixed.load_run(mixed.run_path(seed)).model_at(max(history.checkpoints), device)
    data = mixed.eval_batch(config, device, n=256)
    sets = sequences.eval_sets(config.model_config(), device)
    head_scores = scores.head_scores(model, sets.prefix_tokens, data.tokens[:64], sets.copy_tokens)
    found = scores.induction_heads(head_scores)
    with torch.inference_mode():
        clean = mixed.icl_by_kind(scores.per_token_loss(model, data.tokens), data, config)
    print(f"seed {seed}: trained {history.loss.shape[0]} steps in {history.seconds:.0f} s on {device}")
    print(f"  ICL repeated {clean['repeated']:.2f}, non-repeated {clean['non-repeated']:.2f} nats")
    for name in ("prefix matching", "copying"):
        print(f"  layer 1 {name}: " + " ".join(f"{x:.2f}" for x in head_scores[name][1].tolist()))
    print("  layer 0 previous token: " + " ".join(f"{x:.2f}" for x in head_scores["previous token"][0].tolist()))
    layer1 = [h for h in found if h[0] == 1]
    print(f"  induction heads (book's criteria): {[head_name(h) for h in found] or 'none'}")
    if not 1 <= len(layer1) <= model.cfg.n_heads // 2:
        top = head_scores["prefix matching"][1].argsort(descending=True)[:2].tolist()
        layer1 = [(1, h) for h in sorted(top)]
        print(f"  no minority of induction heads: the top two by prefix matching stand in, {layer1}")
    names = ", ".join(head_name(h) for h in layer1)
    for replacement in ablation.REPLACEMENTS:
        contrast = mixed.ablation_contrast(model, data, layer1, replacement, config=config)
        for kind in mixed.POSITION_KINDS:
            controls = contrast.controls[kind]
            print(
                f"  {replacement:>8} {kind:>12}: {names} {contrast.heads[kind]:6.0%} | "
                f"{len(controls)} other sets: mean {controls.mean():5.0%}, "
                f"range {controls.min():5.0%} to {controls.max():5.0%}"
            )
    sources = [(0, h) for h in range(model.cfg.n_heads)]
    cut = ablation.key_path_cut_losses(model, data.tokens, sources, layer1)  # (sources, targets, batch, seq - 1)
    removed = mixed.shares_removed(clean, mixed.icl_by_kind(cut, data, config))["repeated"]
    print("  key path cut, share of repeated ICL removed (rows: layer-0 source; columns: " + names + ")")
    for source, row in zip(sources, removed):
        print(f"    {head_name(source)} " + " ".join(f"{x:6.0%}" for x in row.tolist()))


if __name__ == "__main__":
    import sys

    if "--seeds" in sys.argv:
        for seed in [a for a in sys.argv[sys.argv.index("--seeds") + 1 :] if a != "--save"]:
            seed_sweep(int(seed), save="--save" in sys.argv)
    else:
        for key, value in run().items():
            print(f"{key}: {value}")
