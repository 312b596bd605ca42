"""How fast does the induction-head phase change arrive? The book's set-up vs. a plain loop.

Prints steps/s, and the step and wall time of the phase change (the book's phase-change step,
``lib.induction.dynamics.phase_change_step``: the loss on the tokens an induction head can predict falls below 1 nat),
for

- the book: ``lib.induction`` data (a segment of 5-24 distinct tokens repeated until the sequence is
  full), ``lib.core.train.train``, the chapter's learning rate and batch size;
- a plain loop: the same two-layer attention-only transformer_lens model (d_model 64, 4 heads),
  AdamW at lr 1e-3, batch 64, sequences of 48 tokens in which a random segment of 5-23 tokens is
  repeated once and the rest is fresh random tokens, ``return_type="loss"`` and a ``.item()`` per step.

Then the ratio of the two wall times. Both run on :func:`lib.core.device.pick_device` (``CIRCUITS_DEVICE`` chooses),
with their data drawn on the CPU and moved there, so the losses are the CPU's on every device; every clock reading
waits for the device's queued work (:func:`lib.core.device.clock`).
Run: ``PYTHONPATH=$PWD python bench/induction_train.py``.
"""

from __future__ import annotations

import os
from dataclasses import replace

import torch
from torch import nn

from lib.core.device import clock, pick_device
from lib.core.tokens import BOS
from lib.induction import dynamics, models, scores, sequences

THRESHOLD = dynamics.PHASE_CHANGE_LOSS  # 1 nat, on the tokens an induction head can predict
EVERY = 25


def book(max_steps: int = 800) -> tuple[float, int | None, float | None]:
    device = pick_device()
    config = sequences.InductionConfig()
    model = models.make_model(config, seed=0, device=device)
    tokens, period = sequences.repeated_sequences(256, sequences.seeded_generator(123), config, device)
    mask = sequences.repeat_mask(period, config)
    start = clock(device)

    def evaluate(m: nn.Module) -> tuple[float, float]:
        return scores.masked_mean(scores.per_token_loss(m, tokens), mask).item(), clock(device) - start

    steps = tuple(range(0, max_steps + 1, EVERY))
    # the chapter's settings (lr, batch size, optimizer), with this benchmark's length and checkpoints
    chapter = replace(models.TRAINING, steps=max_steps, checkpoint_steps=steps, progress=False)
    history = models.fit(model, config, 0, train_config=chapter, evaluate=evaluate)
    marks = history.evals
    hit = dynamics.phase_change_step(steps, [marks[s][0] for s in steps], THRESHOLD)
    return max_steps / history.seconds, hit, (marks[hit][1] if hit is not None else None)


def plain(max_steps: int = 3000, device: torch.device | None = None) -> tuple[float, int | None, float | None]:
    """A hand-written loop: (steps per second, phase-change step, its seconds) on ``device`` (default: pick_device)."""
    seq, vocab = 48, 64
    device = pick_device() if device is None else device
    config = sequences.InductionConfig(seq_len=seq, max_repeat=23, prefix_segment=11)  # (prefix set unused here)
    model = models.make_model(config, seed=0, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)

    def batch(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        length = torch.randint(5, 24, (n,), generator=generator)
        tokens = torch.randint(1, vocab, (n, seq), generator=generator)
        tokens[:, 0] = BOS
        position = torch.arange(seq)
        repeated = (position[None] > length[:, None]) & (position[None] <= 2 * length[:, None])
        source = (position[None] - length[:, None]).clamp(min=0)
        tokens = torch.where(repeated, tokens.gather(1, source), tokens)
        # predictable (aligned with the loss): the current token is a repeat and so is the next one
        predictable = (position[None, :-1] > length[:, None]) & (position[None, 1:] <= 2 * length[:, None])
        return tokens.to(device), predictable.to(device)  # drawn on the CPU: the same data on every device

    eval_tokens, eval_mask = batch(256)
    start = clock(device)
    hit = hit_time = None
    for step in range(1, max_steps + 1):
        tokens, _ = batch(64)
        loss = model(tokens, return_type="loss")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()
        if step % EVERY == 0:
            with torch.inference_mode():
                repeated = scores.masked_mean(scores.per_token_loss(model, eval_tokens), eval_mask).item()
            if repeated < THRESHOLD:
                hit, hit_time = step, clock(device) - start
                break
    return step / (clock(device) - start), hit, hit_time


def run() -> dict:
    """Both set-ups' speed and phase-change step and time, and the ratios (bench/run_all.py)."""
    b_rate, b_step, b_time = book()
    p_rate, p_step, p_time = plain()
    out = {
        "book steps/s": b_rate,
        "book phase-change step": b_step,
        "book phase-change s (target <= 20)": b_time,
        "plain steps/s": p_rate,
        "plain phase-change step": p_step,
        "plain phase-change s": p_time,
    }
    if b_time and p_time:
        out["plain / book wall time"] = p_time / b_time
        out["plain / book steps"] = p_step / b_step
    return out


def main() -> None:
    print(f"device: {pick_device()}, torch threads: {torch.get_num_threads()}, load average: {os.getloadavg()}")
    for key, value in run().items():
        print(f"{key:>36}: {value if value is None or isinstance(value, int) else f'{value:.2f}'}")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
