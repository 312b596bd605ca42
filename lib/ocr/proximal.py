"""A nuclear-norm proximal step for the merged one-layer model (chapter 3): the explicit version of the bias that
gradient descent gives the factorized model from a small start.

While :func:`nuclear_proximal` is active, every optimizer step that updates a merged :class:`OneLayer`'s ``W_OV`` is
followed by singular-value thresholding of each member's ``(d, d)`` map at ``lr * strength``: the proximal step of
``strength * ||W_OV||_*``. With plain gradient descent that is proximal gradient descent on
``loss + strength * ||W_OV||_*``; with Adam(W) it is a heuristic (the step it follows is rescaled per entry).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from lib.core import validate
from lib.ocr.onelayer import OneLayer
from lib.ocr.theory import svt


@contextmanager
def nuclear_proximal(model: OneLayer, strength: float) -> Iterator[None]:
    """Within the ``with`` block, threshold the singular values of ``model.W_OV`` ``(S, d, d)`` by ``lr * strength``
    after every optimizer step whose parameters include it (``lr`` of that parameter's group)."""
    if not isinstance(model, OneLayer) or model.config.parameterization != "merged":
        raise ValueError("nuclear_proximal needs a merged OneLayer (it thresholds W_OV)")
    validate.positive_number("strength", strength)

    def after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        for group in optimizer.param_groups:
            if any(p is model.W_OV for p in group["params"]):
                with torch.no_grad():
                    for member in model.W_OV:  # (d, d) each
                        member.copy_(svt(member, group["lr"] * strength))

    handle = register_optimizer_step_post_hook(after_step)
    try:
        yield
    finally:
        handle.remove()
