"""What chapter 4's pretrained section costs in memory, measured offline with a model of GPT-2 small's shape.

    PYTHONPATH=$PWD python bench/pretrained_memory.py [--steps 20]

The section fine-tunes a hub model (GPT-2 small by default) only when the hub can be reached, which the book's
machines cannot. This script runs the same pipeline (:func:`lib.ocr.ranking.fine_tune_and_rank`, the section's lr, batch
and ranking batch) on a randomly initialised ``GPT2LMHeadModel`` of GPT-2 small's shape (124M parameters, fp32,
AdamW) with the chapter's word tokenizer, on the device the chapter uses (:func:`lib.core.device.pick_device`;
``CIRCUITS_DEVICE`` chooses), and prints the process's peak resident memory, on CUDA the GPU's peak allocated memory
too, and the wall time (the clock read once the device has finished, :func:`lib.core.device.clock`). Memory does not
depend on the weights' values.

Measured on the 2-core CPU, one torch thread, 20 steps, 2026-11-30 (load average 6-9: other jobs on both cores):
peak resident memory 3.67 GB for the whole process (0.99 GB after building the model); 502 s for the 20 steps and
the three rankings.
"""

from __future__ import annotations

import argparse
import resource

import torch

from lib.core.device import clock, pick_device


def run(steps: int = 20) -> dict[str, float | str]:
    """Peak resident memory (GB), on CUDA the GPU's peak allocated memory (GB), and wall time (s) of ``steps``
    fine-tuning steps plus the three rankings, on :func:`lib.core.device.pick_device`."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from lib.core import train
    from lib.ocr import lm, ranking, sentences

    device = pick_device()
    task = sentences.build_sentences(sentences.SentenceConfig())
    tokenizer = lm.task_tokenizer(task)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=50257)).to(device)  # initialised on the CPU, as load_pretrained's
    start = clock(device)
    config = train.TrainConfig(steps=steps, lr=1e-4, batch_size=32, desc="GPT-2 small shape")
    ranking.fine_tune_and_rank(model, tokenizer, task, config, batch_size=64)
    result: dict[str, float | str] = {
        "device": str(device),
        "parameters_millions": sum(p.numel() for p in model.parameters()) / 1e6,
        "peak_memory_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,  # Linux: kilobytes
        "seconds": clock(device) - start,
    }
    if device.type == "cuda":
        result["peak_gpu_memory_gb"] = torch.cuda.max_memory_allocated(device) / 1e9
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    result = run(parser.parse_args().steps)
    gpu = f", GPU peak {result['peak_gpu_memory_gb']:.2f} GB" if "peak_gpu_memory_gb" in result else ""
    print(
        f"{result['parameters_millions']:.0f}M parameters on {result['device']}: peak memory "
        f"{result['peak_memory_gb']:.2f} GB{gpu}, {result['seconds']:.0f} s"
    )
