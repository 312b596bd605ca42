"""How long chapter 4's pretrained section takes, measured offline with a model of GPT-2 small's shape.

    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python bench/pretrained_time.py [--steps 5]

The section (switched on by the learner) downloads GPT-2 small and runs :func:`lib.ocr.ranking.fine_tune_and_rank`
with :data:`lib.ocr.lm.PRETRAINED_TRAINING` (300 steps). Without a network, this script runs that same call, with
the chapter's settings but ``--steps`` steps, on a randomly initialised ``GPT2LMHeadModel`` built from the default
``GPT2Config``, which is GPT-2 small's architecture (124M parameters, dropout 0.1, fp32, AdamW); time does not
depend on the weights' values. It prints the time of the rankings (before and after fine-tuning, three in all),
the time a fine-tuning step and their extrapolation to the chapter's steps: rankings + steps x time a step; each
as wall time and as the process's CPU time, about what the wall time would be on an idle core with one torch
thread (on a shared machine the wall time grows with the load, the CPU time much less).

It also counts the matrix-multiply arithmetic of the chapter's fine-tuning (:func:`training_flops`) and divides it by
a T4's fp32 peak (8.1 TFLOPS, NVIDIA's data sheet): a floor for a Colab GPU runtime's time, not a measurement.

The sentences are tokenized by the chapter's word tokenizer (GPT-2's own tokenizer needs the hub); GPT-2's byte
pair encoding splits the invented names into more tokens, so the chapter's sequences are longer than these. The
download (about 0.55 GB) is not included.

Measured 2026-12-05 on the 2-core CPU, one torch thread, other jobs running (load average 5-7), 5 and 10 steps: CPU
time 91 s of rankings and 4.4-4.6 s a step, 24 minutes for the chapter's 300 steps and rankings; wall time 78-80
minutes. Numbers in ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any

T4_FP32_FLOPS = 8.1e12


def training_flops(model: object, rows: int, width: int, targets: float) -> float:
    """Multiply-add arithmetic (2 FLOPs each, backward twice forward) of one step of :func:`lib.ocr.lm.lm_loss`.

    ``rows`` sentences padded to ``width`` tokens run through the blocks (``12 d^2`` weights a layer and token);
    the output layer (``d x vocab``) runs only at the ``targets`` real next-token positions. Attention's own
    products (``width`` per token) are left out: at a dozen tokens they are under 1% of the total.
    """
    cfg = model.config  # type: ignore[attr-defined]
    blocks = 12 * cfg.n_embd**2 * cfg.n_layer * rows * width
    head = cfg.n_embd * cfg.vocab_size * targets
    return 3 * 2 * (blocks + head)


def run(steps: int = 5) -> dict[str, float]:
    """Seconds of the rankings and of one fine-tuning step, and the extrapolated time of the chapter's run."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from lib.ocr import lm, ranking, sentences

    task = sentences.build_sentences(sentences.SentenceConfig())
    tokenizer = lm.task_tokenizer(task)
    model = GPT2LMHeadModel(GPT2Config())  # GPT-2 small's shape: what load_pretrained("gpt2") builds
    config = dataclasses.replace(lm.PRETRAINED_TRAINING, steps=steps, progress=False)
    fine_tune = ranking.fine_tune
    spent: dict[str, float] = {}

    def timed_fine_tune(*args: Any, **kwargs: Any) -> Any:  # the same fine-tuning, with a clock around it
        started = time.perf_counter(), time.process_time()
        history = fine_tune(*args, **kwargs)
        spent["wall"], spent["cpu"] = time.perf_counter() - started[0], time.process_time() - started[1]
        return history

    ranking.fine_tune = timed_fine_tune
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        ranking.fine_tune_and_rank(model, tokenizer, task, config, batch_size=lm.PRETRAINED_RANK_BATCH)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        ranking.fine_tune = fine_tune
    ids, mask = lm.encode_sentences(tokenizer, task.train_sentences())
    batch, chapter_steps = config.batch_size, lm.PRETRAINED_TRAINING.steps
    flops = training_flops(model, batch, ids.shape[1], batch * mask[:, 1:].sum().item() / len(ids))
    out: dict[str, float] = {
        "parameters_millions": sum(p.numel() for p in model.parameters()) / 1e6,
        "threads": torch.get_num_threads(),
        "tokens_per_sentence": mask.sum().item() / len(ids),
        "chapter_steps": chapter_steps,
        "cpu_gflops": flops / (spent["cpu"] / steps) / 1e9,
        "chapter_train_tflop": lm.PRETRAINED_TRAINING.steps * flops / 1e12,
        "t4_floor_seconds": lm.PRETRAINED_TRAINING.steps * flops / T4_FP32_FLOPS,
        "load_average": os.getloadavg()[0],
    }
    for kind, total in (("wall", wall), ("cpu", cpu)):
        step = spent[kind] / steps
        out[f"{kind}_rankings_seconds"] = total - spent[kind]
        out[f"{kind}_step_seconds"] = step
        out[f"{kind}_chapter_seconds"] = total - spent[kind] + chapter_steps * step
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    r = run(parser.parse_args().steps)
    print(
        f"{r['parameters_millions']:.0f}M parameters, {r['threads']} torch thread(s), "
        f"{r['tokens_per_sentence']:.1f} tokens a training sentence (word tokenizer), "
        f"load average {r['load_average']:.1f} at the end\n"
        + "".join(
            f"{kind}: rankings (before and after fine-tuning) {r[f'{kind}_rankings_seconds']:.0f} s, "
            f"one fine-tuning step {r[f'{kind}_step_seconds']:.2f} s; the chapter's {r['chapter_steps']:.0f} "
            f"steps and rankings {r[f'{kind}_chapter_seconds']:.0f} s ({r[f'{kind}_chapter_seconds'] / 60:.1f} min)\n"
            for kind in ("wall", "cpu")
        )
        + f"fine-tuning arithmetic: {r['chapter_train_tflop']:.0f} TFLOP for the chapter's steps "
        + f"({r['cpu_gflops']:.0f} GFLOP/s here); at a T4's fp32 peak {r['t4_floor_seconds']:.0f} s (a floor)"
    )
