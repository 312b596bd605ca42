"""Reading curves over training: when the phase change happens, when a curve makes its change,
and the per-token-loss trajectory (chapters 5-8).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from lib.core import validate

PHASE_CHANGE_LOSS = 1.0
"""The phase change happens at the first checkpoint whose loss on repeated tokens is below this (nats)."""

PHASE_CHANGE_BAND = (3.0, 0.3)
"""``(upper, lower)`` nats: the phase-change window spans the fall of the loss on repeated tokens from
``upper`` to ``lower`` around the phase-change step (see the module docstring)."""


def one_token_per_sequence(loss: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss of one random position per sequence, the same position at every checkpoint (Olsson et al.'s
    sample for the per-token-loss PCA: one token from each of many sequences, so the tokens are independent).

    Args:
        loss: ``(..., batch, seq - 1)`` per-token loss, e.g. stacked over checkpoints.
        seed: seeds the choice of positions.

    Returns:
        ``(picked (..., batch), positions (batch,) int64)``.
    """
    if loss.ndim < 2:
        raise ValueError(f"loss must be (..., batch, seq - 1), got shape {tuple(loss.shape)}")
    batch, n = loss.shape[-2:]
    generator = torch.Generator().manual_seed(validate.seed(seed))
    positions = torch.randint(0, n, (batch,), generator=generator).to(loss.device)
    picked = loss.gather(-1, positions.view(batch, 1).expand(*loss.shape[:-1], 1))[..., 0]
    return picked, positions


def pca(matrix: torch.Tensor, k: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Project the rows of ``matrix`` onto its top ``k`` principal components.

    Args:
        matrix: ``(n_rows, n_features)``, e.g. one flattened per-token-loss vector per checkpoint.

    Returns:
        ``(coordinates (n_rows, k), explained_variance_ratio (k,))``.
    """
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D (n_rows, n_features), got shape {tuple(matrix.shape)}")
    validate.positive_int("k", k)
    if k > min(matrix.shape):
        raise ValueError(f"need 1 <= k <= min(shape); got shape {tuple(matrix.shape)}, k={k!r}")
    matrix = matrix.cpu().double()  # float64 and SVD on the CPU: mps has neither
    centred = matrix - matrix.mean(dim=0, keepdim=True)
    u, s, _ = torch.linalg.svd(centred, full_matrices=False)
    explained = s**2 / (s**2).sum().clamp_min(1e-30)
    return (u[:, :k] * s[:k]).float(), explained[:k].float()


def phase_change_step(
    steps: Iterable[int], repeated_loss: Iterable[float] | torch.Tensor, threshold: float = PHASE_CHANGE_LOSS
) -> int | None:
    """The phase-change step: the first checkpoint whose loss on repeated tokens is below ``threshold``.

    ``None`` if no checkpoint is (the run has no phase change). See the module docstring for the definition.

    Args:
        steps: ``(K,)`` increasing checkpoint steps. repeated_loss: ``(K,)`` loss on repeated tokens
            (:func:`lib.induction.sequences.repeat_mask`) at those steps.
    """
    at, values = _curve(steps, repeated_loss, minimum=1)
    if not threshold > 0:
        raise ValueError(f"threshold must be a positive loss in nats, got {threshold!r}")
    return next((step for step, value in zip(at, values) if value < threshold), None)


def phase_change_window(
    steps: Iterable[int], repeated_loss: Iterable[float] | torch.Tensor, band: tuple[float, float] = PHASE_CHANGE_BAND
) -> tuple[int, int]:
    """The phase-change window: the checkpoints over which the loss on repeated tokens makes its big drop.

    With ``band = (upper, lower)``: the window starts at the last checkpoint before the phase-change step
    (:func:`phase_change_step`) whose loss is still ``>= upper`` (the first checkpoint if none is), and ends
    at the first checkpoint from that step on whose loss is ``< lower`` (the last checkpoint if none is
    yet). The phase-change step lies inside it.

    Args:
        steps: ``(K,)`` increasing checkpoint steps. repeated_loss: ``(K,)`` loss on repeated tokens.
        band: ``(upper, lower)`` nats with ``upper > PHASE_CHANGE_LOSS > lower > 0``.

    Raises:
        ValueError: the run has no phase change (the loss never falls below :data:`PHASE_CHANGE_LOSS`).
    """
    at, values = _curve(steps, repeated_loss, minimum=2)
    upper, lower = band
    if not upper > PHASE_CHANGE_LOSS > lower > 0:
        raise ValueError(f"band must be (upper, lower) with upper > {PHASE_CHANGE_LOSS} > lower > 0, got {band!r}")
    step = phase_change_step(at, values)
    if step is None:
        raise ValueError(
            f"the loss never falls below {PHASE_CHANGE_LOSS} nat (lowest {min(values):.3f}): no phase change to locate"
        )
    i = at.index(step)
    start = max((j for j in range(i) if values[j] >= upper), default=0)
    end = next((j for j in range(i, len(at)) if values[j] < lower), len(at) - 1)
    return at[start], at[end]


def half_change_step(steps: Iterable[int], values: Iterable[float] | torch.Tensor) -> int:
    """The first checkpoint at which a curve has covered half of its change from its first to its last value.

    Dates each signature of the phase change (a loss falling, a score rising) on one time axis.

    Args:
        steps: ``(K,)`` increasing checkpoint steps. values: ``(K,)`` the curve at those steps.

    Raises:
        ValueError: the curve ends where it started (no change to date).
    """
    at, v = _curve(steps, values, minimum=2)
    first, last = v[0], v[-1]
    if first == last:
        raise ValueError(f"the curve ends where it started ({first!r}): no change to date")
    half = (first + last) / 2
    return next(s for s, x in zip(at, v) if (x - half) * (last - first) >= 0)


def mean_before(steps: Iterable[int], per_step: torch.Tensor, span: int) -> torch.Tensor:
    """A per-step curve (e.g. the training loss) averaged over the ``span`` steps up to each checkpoint.

    Args:
        steps: ``(K,)`` checkpoint steps (0 = before training). per_step: ``(n_steps,)`` with entry ``t``
            measured at step ``t + 1`` (as :attr:`lib.core.train.History.loss`). span: how many steps to average.

    Returns:
        ``(K,)``: at checkpoint ``s``, the mean of entries ``max(s, 1) - span .. max(s, 1) - 1`` (clipped at 0),
        so step 0 takes the first step's loss, the loss of the initial weights.
    """
    validate.positive_int("span", span)
    if per_step.ndim != 1 or per_step.numel() == 0:
        raise ValueError(f"per_step must be a non-empty 1-D tensor, got shape {tuple(per_step.shape)}")
    out = []
    for step in steps:
        validate.index("a checkpoint step", step, per_step.numel() + 1, f"steps 0 .. {per_step.numel()}")
        last = max(int(step), 1)
        out.append(per_step[max(0, last - span) : last].float().mean())
    return torch.stack(out)


def turning_angle(coords: torch.Tensor, lag: int = 1) -> torch.Tensor:
    """How sharply a trajectory turns at each point: the angle between the stretch in and the stretch out.

    Args:
        coords: ``(K, k)`` points of a trajectory, e.g. PCA coordinates per checkpoint (:func:`pca`).
        lag: each stretch spans ``lag`` points (larger = less sensitive to noise).

    Returns:
        ``(K,)`` degrees: at point ``i``, the angle between ``coords[i] - coords[i - lag]`` and
        ``coords[i + lag] - coords[i]`` (0 = straight on, 90 = a right angle, 180 = straight back);
        NaN within ``lag`` of either end and where the trajectory stands still.
    """
    if coords.ndim != 2:
        raise ValueError(f"coords must be (K, k), got shape {tuple(coords.shape)}")
    validate.positive_int("lag", lag)
    c = coords.cpu().double()
    angle = torch.full((c.shape[0],), float("nan"), dtype=torch.float64)
    if c.shape[0] > 2 * lag:
        before = c[lag:-lag] - c[: -2 * lag]
        after = c[2 * lag :] - c[lag:-lag]
        norms = before.norm(dim=1) * after.norm(dim=1)
        cos = (before * after).sum(dim=1) / norms
        inner = torch.rad2deg(torch.arccos(cos.clamp(-1, 1)))
        angle[lag:-lag] = torch.where(norms > 0, inner, torch.nan)
    return angle.float()


def window_middle(steps: Iterable[int], window: tuple[int, int]) -> int:
    """The checkpoint step nearest the middle of a phase-change ``window`` (the earlier one on a tie)."""
    centre = (window[0] + window[1]) / 2
    return min(steps, key=lambda step: abs(step - centre))


def _curve(steps: Iterable[int], loss: Iterable[float] | torch.Tensor, minimum: int) -> tuple[list[int], list[float]]:
    """``steps`` and ``loss`` as two lists of the same length, at least ``minimum`` long."""
    at, values = [int(s) for s in steps], [float(v) for v in loss]
    if len(at) != len(values) or len(at) < minimum:
        raise ValueError(f"need matching steps and losses, at least {minimum}; got {len(at)} and {len(values)}")
    return at, values


def steepest_rise(steps: Iterable[int], values: Iterable[float] | torch.Tensor, span: int) -> tuple[int, int]:
    """``(s, s + span)``: the stretch of ``span`` steps, both ends logged, over which a curve rises the most.

    Dates a change without choosing levels of the curve itself (chapter 8 dates its phase change by the ICL score's
    steepest improvement). The earliest such stretch wins a tie.

    Args:
        steps: ``(K,)`` increasing steps. values: ``(K,)``. span: the stretch's length in steps.
    """
    at, v = _curve(steps, values, minimum=2)
    validate.positive_int("span", span)
    value_at = dict(zip(at, v))
    stretches = [(value_at[s + span] - value_at[s], s) for s in at if s + span in value_at]
    if not stretches:
        raise ValueError(f"no two logged steps are {span} apart: steps {at[:5]}...")
    best = max(rise for rise, _ in stretches)
    start = next(s for rise, s in stretches if rise == best)
    return start, start + span


def rise_step(steps: Iterable[int], values: Iterable[float] | torch.Tensor, share: float) -> int:
    """The first step at which a rising curve has covered ``share`` of the way from its first value to its maximum.

    Unlike :func:`half_change_step` (first to *last* value), a curve that falls back after its peak is dated by its
    rise alone.

    Args:
        steps: ``(K,)`` increasing steps. values: ``(K,)``. share: in ``[0, 1]``.
    """
    at, v = _curve(steps, values, minimum=2)
    validate.unit_interval("share", share)
    first, top = v[0], max(v)
    if top <= first:
        raise ValueError("the curve never rises above its first value: no rise to locate")
    return next(s for s, x in zip(at, v) if (x - first) / (top - first) >= share)


def rise_window(
    steps: Iterable[int], values: Iterable[float] | torch.Tensor, low: float = 0.1, high: float = 0.9
) -> tuple[int, int]:
    """Where a rising curve makes its rise: the first steps at which it has covered ``low`` and ``high`` of the way
    from its first value to its maximum (:func:`rise_step`; chapter 8 dates its phase change by it).

    Args:
        steps: ``(K,)`` increasing steps. values: ``(K,)``.
    """
    if not 0 <= low < high <= 1:
        raise ValueError(f"need 0 <= low < high <= 1, got low={low!r}, high={high!r}")
    steps = list(steps)
    return rise_step(steps, values, low), rise_step(steps, values, high)


def stays_above_step(steps: Iterable[int], values: Iterable[float] | torch.Tensor, level: float) -> int | None:
    """The first checkpoint from which a curve stays at or above ``level`` to the last checkpoint.

    Dates a score against a null where its curve is not monotone (chapter 5: the K-composition in standard
    deviations of its rotation null rises, falls back, then rises for good). ``None`` if the last value is below.

    Args:
        steps: ``(K,)`` increasing checkpoint steps. values: ``(K,)`` the curve at those steps.
    """
    at, v = _curve(steps, values, minimum=1)
    start = None
    for step, x in zip(at, v):
        if x >= level:
            start = step if start is None else start
        else:
            start = None
    return start
