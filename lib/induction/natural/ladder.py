"""The plain two-layer runs on natural text at a small batch (issue 39), as shipped: what each logged over training.

Chapter 8's two-layer model formed no induction head in 298 M tokens at batch 64 × context 256. Aoyama et al.'s fit
of the onset, about :math:`10^{5.7}\\sqrt{B \\cdot C}` tokens, makes a small batch the cheap lever, so these runs
trained :mod:`lib.induction.natural.recipes`' slim model (2 layers, no LayerNorm, shortformer positions, gradient
norm clipped at 1) at batch 8 × context 128, one torch thread on the CPU: on chapter 8's corpus, on the same corpus
with a stated share of windows repeating a span of their own text, and, as the check that the same code forms an
induction head where one is known to form, on chapter 5's repeated random tokens. Each logged every 100 to 500
steps (:func:`lib.induction.natural.recipes.run`): the held-out loss, every head's prefix matching on the
Olsson-style probe (BOS, 63 distinct tokens of frequency rank 33-256, the same again) and every head's
previous-token score on held-out windows. ``bench/natural_ladder.py`` collects the logs into :data:`LADDER`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from lib.core.shipped import DATA, load_results

LADDER = DATA / "natural_ladder.json"
"""The shipped logs (``bench/natural_ladder.py``)."""

CRITERION = 0.75
"""The prefix-matching score the book asks of an induction head (chapter 5)."""


@dataclass(frozen=True)
class LadderRun:
    """One run's settings and its log, a value per logged step.

    Attributes:
        settings: ``{"width", "heads", "d_head", "lr", "batch", "context", "seed", "data", "stopped"}`` (``data``:
            what it trained on, e.g. "Python source" or "repeated random tokens"; ``stopped``: why the log ends).
        tokens: ``(n,)`` training tokens at each logged step, in millions.
        held_loss: ``(n,)`` held-out loss (nats).
        prefix_matching: ``(n,)`` the best layer-1 head's prefix matching on the probe.
        previous_token: ``(n,)`` the best layer-0 head's previous-token score.
        copies: ``(n, 2)`` the probe's loss on its first and second copy (nats).
        last_heads: ``(heads,)`` every layer-1 head's prefix matching at the last log.
    """

    name: str
    settings: dict
    tokens: torch.Tensor
    held_loss: torch.Tensor
    prefix_matching: torch.Tensor
    previous_token: torch.Tensor
    copies: torch.Tensor
    last_heads: torch.Tensor

    @property
    def steps(self) -> list[int]:
        """The training step of each log line."""
        per_step = self.settings["batch"] * (self.settings["context"] - 1)
        return [round(t * 1e6 / per_step) for t in self.tokens.tolist()]


def load_ladder(path: Path | str = LADDER) -> dict[str, LadderRun]:
    """The shipped runs, by name ("width 128, lr 5e-3"), in the order they were run.

    Raises:
        ValueError: no file at ``path``, or not one ``bench/natural_ladder.py`` wrote.
    """
    data = load_results(path, ["runs"], what="natural-text ladder logs", made_by="bench/natural_ladder.py")
    return {
        name: LadderRun(
            name,
            run["settings"],
            torch.tensor(run["tokens_M"]),
            torch.tensor(run["held_loss"]),
            torch.tensor(run["prefix_matching"]),
            torch.tensor(run["previous_token"]),
            torch.tensor(run["copies"]),
            torch.tensor(run["last_layer1_pm"]),
        )
        for name, run in data["runs"].items()
    }
