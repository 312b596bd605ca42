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
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import torch

from lib.core.device import pick_device
from lib.core.heads import Head
from lib.core.train import snapshot
from lib.induction import ablation, models, scores, sequences

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


def _best_time(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
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
            book = _best_time(partial(ablation.ablated_losses, model, tokens, ablations, kind))
            plain = _best_time(partial(_plain, model, tokens, ablations, kind))
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
    start = time.perf_counter()
    scores.over_checkpoints(
        model,
        checkpoints,
        lambda m: {kind: ablation.ablated_losses(m, tokens, ablations, kind) for kind in ablation.KINDS},
    )
    results[
        f"chapter sweep ({CHECKPOINTS} checkpoints x {len(ablations)} ablations x {SEQUENCES} sequences x 2 kinds) s"
    ] = round(time.perf_counter() - start, 2)
    results["load average (1 min) at the end"] = round(os.getloadavg()[0], 2)
    return results


if __name__ == "__main__":
    for key, value in run().items():
        print(f"{key}: {value}")
