"""The implicit-bias theory of the OCR chapters, solved numerically (Huang et al. 2025, section 4).

Gradient training of the one-layer model on the cross-entropy loss drives the output-value matrix, in
direction, towards a max-margin solution, and the parameterization decides which one:

    min ||W||   subject to   margin_k(W) >= 1 for every training example k.

For the merged ``W_OV`` gradient flow converges in direction to the minimum of the Frobenius norm ``||W||_F``
(a convex problem). For the factorized ``W_O W_V^T`` it converges to a KKT point of the max-margin problem in the
factors, ``min (||W_O||_F^2 + ||W_V||_F^2) / 2``; that problem's global minima are the minima of the nuclear norm
``||W||_* = sum of singular values``, but its KKT points need not be (chapter 3 measures how close gradient
descent comes). This module solves the two convex problems.

The margin of an example is the **multiclass margin**: the logit of the correct answer minus the largest
logit among the other candidate answers. Requiring it to be >= 1 is the same as requiring
``logit(correct) - logit(a) >= 1`` for every other candidate ``a``: a set of linear constraints.

The solver is an augmented Lagrangian method whose inner problems are solved by accelerated proximal
gradient (FISTA); the proximal step of the nuclear norm is singular-value thresholding, that of the
Frobenius norm a shrinkage of the whole matrix. Its multipliers give a dual certificate: at the optimum
``sum(multipliers) == ||W||`` (see :class:`Solution`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack, get_args

import torch
from torch import Tensor

from lib.core import validate

Norm = Literal["nuclear", "frobenius"]
"""The norm a max-margin problem minimizes: nuclear (factorized model) or Frobenius (merged model)."""

NORMS: tuple[Norm, ...] = get_args(Norm)


def multiclass_margins(logits: Tensor, targets: Tensor) -> Tensor:
    """Correct logit minus the largest other logit, per example.

    Args:
        logits: ``(..., N, C)`` logits over the ``C`` candidate answers.
        targets: ``(N,)`` int64 index (into the candidates) of the correct answer.
    Returns:
        ``(..., N)`` margins (positive = correct answer ranked first).
    """
    if targets.ndim != 1 or logits.shape[-2] != targets.shape[0]:
        raise ValueError(
            f"targets must have shape (N,) matching logits (..., N, C); "
            f"got {tuple(targets.shape)} and {tuple(logits.shape)}"
        )
    if targets.numel() and (targets.min() < 0 or targets.max() >= logits.shape[-1]):
        raise ValueError(
            f"targets must index the {logits.shape[-1]} candidates, "
            f"got range [{int(targets.min())}, {int(targets.max())}]"
        )
    index = targets.to(logits.device).view(*([1] * (logits.ndim - 2)), -1, 1).expand(*logits.shape[:-1], 1)
    correct = logits.gather(-1, index).squeeze(-1)
    others = logits.scatter(-1, index, float("-inf"))
    return correct - others.max(-1).values


def other_rows(targets: Tensor, n_rows: int) -> Tensor:
    """For every example, the row indices other than its target, in increasing order: ``(N, n_rows - 1)`` int64."""
    rows = torch.arange(n_rows - 1, device=targets.device).expand(len(targets), -1)
    return rows + (rows >= targets[:, None]).long()


def pairwise_margins(W: Tensor, inputs: Tensor, targets: Tensor, others: Tensor | None = None) -> Tensor:
    """``logit(correct) - logit(a)`` for every example and every other row ``a`` of ``W``: ``(N, m - 1)``.

    Args:
        W: ``(m, n)``; inputs: ``(N, n)`` (each row a bag of input tokens); targets: ``(N,)`` row index.
        others: ``other_rows(targets, m)``, passed in by callers that evaluate many ``W`` (computed if None).
    """
    others = other_rows(targets, W.shape[0]) if others is None else others
    logits = inputs @ W.T  # (N, m)
    return logits.gather(1, targets[:, None]) - logits.gather(1, others)


def pairwise_margins_adjoint(
    V: Tensor, inputs: Tensor, targets: Tensor, n_rows: int, others: Tensor | None = None
) -> Tensor:
    """The adjoint of :func:`pairwise_margins` (a linear map of ``W``): the gradient of ``<pairwise_margins(W), V>``.

    ``sum_k sum_{a != y_k} V[k, a] (e_{y_k} - e_a) x_k^T``, computed in closed form (no autograd).

    Args:
        V: ``(N, m - 1)`` weights, laid out as :func:`pairwise_margins` returns its values.
        inputs: ``(N, n)``; targets: ``(N,)`` row index; n_rows: ``m``; others: as in :func:`pairwise_margins`.
    Returns:
        ``(m, n)``.
    """
    others = other_rows(targets, n_rows) if others is None else others
    rows = torch.zeros(len(targets), n_rows, dtype=V.dtype, device=V.device).scatter(1, others, -V)
    rows.scatter_(1, targets[:, None], V.sum(1, keepdim=True))
    return rows.T @ inputs.to(V.dtype)


def svt(W: Tensor, tau: float) -> Tensor:
    """Singular-value thresholding (the proximal map of ``tau * ||W||_*``): singular values minus ``tau``, floor 0."""
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    try:
        U, s, Vh = torch.linalg.svd(W.cpu(), full_matrices=False)  # on the CPU: mps has no SVD
    except torch.linalg.LinAlgError:  # LAPACK's divide-and-conquer SVD can fail on many repeated singular values
        return svt_by_eigh(W, tau)
    return ((U * (s - tau).clamp_min(0)) @ Vh).to(W.device)


def svt_by_eigh(W: Tensor, tau: float) -> Tensor:
    """:func:`svt` through the eigendecomposition of ``W W^T`` (or ``W^T W``): slower and less precise for tiny
    singular values, but it does not fail on repeated ones. ``U diag(max(1 - tau / s, 0)) U^T W``."""
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    if W.shape[0] > W.shape[1]:
        return svt_by_eigh(W.T, tau).T
    on_cpu = W.cpu()  # eigh on the CPU, as svt's SVD
    evals, U = torch.linalg.eigh(on_cpu @ on_cpu.T)
    s = evals.clamp_min(0).sqrt()
    keep = torch.where(s > tau, 1 - tau / s.clamp_min(torch.finfo(W.dtype).tiny), torch.zeros_like(s))
    return ((U * keep) @ (U.T @ on_cpu)).to(W.device)


def balanced_factors(W: Tensor) -> tuple[Tensor, Tensor]:
    """The balanced factorization ``W = A B^T``: ``A = U S^{1/2}``, ``B = V S^{1/2}`` from the SVD ``W = U S V^T``.

    Of all factorizations of ``W`` it has the smallest ``(||A||_F^2 + ||B||_F^2) / 2``, and that smallest value is
    ``||W||_*``; it is also balanced, ``A^T A = B^T B = S``.

    Args:
        W: ``(m, n)``.
    Returns:
        ``A`` ``(m, k)`` and ``B`` ``(n, k)``, ``k = min(m, n)``.
    """
    U, s, Vh = torch.linalg.svd(W.cpu(), full_matrices=False)  # on the CPU: mps has no SVD
    root = s.sqrt()
    return (U * root).to(W.device), (Vh.T * root).to(W.device)


def proximal_step(W: Tensor, inputs: Tensor, targets: Tensor, lr: float, lam: float) -> Tensor:
    """One proximal-gradient step on ``mean cross-entropy(inputs @ W.T, targets) + lam * ||W||_*``.

    A plain gradient step on the cross-entropy, then singular-value thresholding by ``lr * lam`` (:func:`svt`, the
    proximal map of ``lr * lam * ||W||_*``).

    Args:
        W: ``(m, n)`` answer x input map; inputs: ``(N, n)`` bags; targets: ``(N,)`` row index of each answer.
    Returns:
        the next ``W``, ``(m, n)``.
    """
    validate.positive_number("lr", lr)
    validate.non_negative_number("lam", lam)
    probs = (inputs @ W.T).softmax(-1)  # (N, m)
    probs[torch.arange(len(targets)), targets] -= 1  # d loss / d logits, times N
    return svt(W - lr * probs.T @ inputs / len(targets), lr * lam)


def shrink(W: Tensor, tau: float) -> Tensor:
    """The proximal map of ``tau * ||W||_F``: scales ``W`` towards 0 by ``tau`` in Frobenius norm (floor 0)."""
    norm = torch.linalg.matrix_norm(W)
    return W * (1 - tau / norm).clamp_min(0) if norm > 0 else W


def matrix_norm(W: Tensor, norm: Norm) -> float:
    """``||W||_*`` or ``||W||_F`` of a 2-D matrix."""
    validate.one_of("norm", norm, NORMS)
    return float(torch.linalg.matrix_norm(W.cpu(), "nuc" if norm == "nuclear" else "fro"))  # nuclear: an SVD


@dataclass(frozen=True)
class Solution:
    """A solution of ``min ||W|| s.t. constraints(W) >= 1``.

    Attributes:
        W: ``(m, n)`` the minimizer, on the CPU (the solvers work in float64 there).
        norm: which norm was minimized.
        value: ``||W||`` at the solution.
        dual_value: sum of the Lagrange multipliers; equal to ``value`` at the exact optimum.
        dual_norm: the dual norm of ``sum_k multiplier_k * grad(constraint_k)`` (operator norm for nuclear,
            Frobenius for Frobenius); 1 at the exact optimum.
        min_constraint: smallest constraint value (>= 1 when feasible).
        iterations: proximal-gradient steps taken.
    """

    W: Tensor
    norm: Norm
    value: float
    dual_value: float
    dual_norm: float
    min_constraint: float
    iterations: int

    @property
    def gap(self) -> float:
        """Relative duality gap ``|value - dual_value| / value`` (0 at the optimum)."""
        return abs(self.value - self.dual_value) / max(self.value, 1e-12)


class SolverOptions(TypedDict, total=False):
    """The tuning keywords of :func:`solve_min_norm`, passed on by :func:`solve_max_margin`."""

    rho: float
    outer: int
    inner: int
    tol: float


def solve_min_norm(
    constraints: Callable[[Tensor], Tensor],
    shape: tuple[int, int],
    norm: Norm = "nuclear",
    *,
    adjoint: Callable[[Tensor], Tensor] | None = None,
    rho: float = 1.0,
    outer: int = 60,
    inner: int = 150,
    tol: float = 1e-6,
) -> Solution:
    """Solve ``min ||W|| subject to constraints(W) >= 1`` for a linear map ``constraints``.

    Augmented Lagrangian: ``min_W ||W|| + rho/2 * sum relu(mu/rho + 1 - c(W))^2`` by FISTA (``inner`` steps,
    step ``1 / (rho * ||c||^2)`` with ``||c||`` found by power iteration), then
    ``mu <- relu(mu + rho (1 - c(W)))``, ``outer`` times at most; stops when the constraints hold to ``tol``
    and the duality gap is below ``tol`` (relative). Works in float64 on the CPU (mps has no float64).

    Args:
        constraints: ``W (m, n) -> (K,)`` linear in ``W`` (e.g. all pairwise margins), on CPU float64 tensors.
        shape: ``(m, n)``.
        norm: one of :data:`NORMS`.
        adjoint: ``v (K,) -> (m, n)``, the adjoint of ``constraints`` (the gradient of ``<constraints(W), v>``);
            ``None`` differentiates ``constraints`` with autograd at every step (slower).
    """
    validate.one_of("norm", norm, NORMS)
    validate.positive_int("outer", outer)
    validate.positive_int("inner", inner)
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"shape must be (rows, cols) with positive sizes, got {shape}")
    prox = svt if norm == "nuclear" else shrink
    dtype = torch.float64
    W = torch.zeros(shape, dtype=dtype)
    K = constraints(W).numel()
    mu = torch.zeros(K, dtype=dtype)

    def by_autograd(v: Tensor) -> Tensor:  # c^T v, by differentiating <c(W), v>
        X = torch.zeros(shape, dtype=dtype, requires_grad=True)
        (grad,) = torch.autograd.grad((constraints(X) * v).sum(), X)
        return grad

    transpose = adjoint or by_autograd

    # ||c||^2 by power iteration on c^T c (c is linear, so c(W) - c(0) = c(W) here: no offset).
    V = torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(0))
    for _ in range(50):
        V = transpose(constraints(V))
        lip = float(torch.linalg.matrix_norm(V))
        V = V / lip
    step = 1.0 / (rho * lip * 1.01)

    iterations = 0
    for _ in range(outer):
        Y, W_prev, t = W.clone(), W.clone(), 1.0
        for _ in range(inner):
            violation = (mu / rho + 1 - constraints(Y)).clamp_min(0)
            W = prox(Y + step * rho * transpose(violation), step)
            t_next = (1 + (1 + 4 * t * t) ** 0.5) / 2
            Y = W + (t - 1) / t_next * (W - W_prev)
            W_prev, t = W, t_next
            iterations += 1
        c = constraints(W)
        mu = (mu + rho * (1 - c)).clamp_min(0)
        value = matrix_norm(W, norm)
        if float((1 - c).clamp_min(0).max()) < tol and abs(value - float(mu.sum())) < tol * max(value, 1e-12):
            break
    dual = transpose(mu)
    dual_norm = float(torch.linalg.matrix_norm(dual, 2 if norm == "nuclear" else "fro"))
    return Solution(W.float(), norm, value, float(mu.sum()), dual_norm, float(constraints(W).min()), iterations)


def solve_max_margin(
    inputs: Tensor, targets: Tensor, n_rows: int, norm: Norm = "nuclear", **solver: Unpack[SolverOptions]
) -> Solution:
    """``min ||W|| s.t. multiclass margin >= 1`` on every example, logits ``inputs @ W.T`` over ``n_rows`` answers.

    Args:
        inputs: ``(N, n)`` float, each row the bag of input tokens of one training example.
        targets: ``(N,)`` int64 index of the correct row.
        n_rows: number of candidate answers ``m`` (rows of ``W``).
        solver: tuning of :func:`solve_min_norm` (``rho``, ``outer``, ``inner``, ``tol``).
    """
    if inputs.ndim != 2 or targets.shape != (inputs.shape[0],):
        raise ValueError(
            f"inputs must be (N, n) and targets (N,), got {tuple(inputs.shape)} and {tuple(targets.shape)}"
        )
    if targets.numel() and (targets.min() < 0 or targets.max() >= n_rows):
        raise ValueError(
            f"targets must lie in [0, n_rows={n_rows}), got range [{int(targets.min())}, {int(targets.max())}]"
        )
    X, y = inputs.cpu().double(), targets.cpu().long()  # the solver works in float64 on the CPU
    others = other_rows(y, n_rows)
    return solve_min_norm(
        lambda W: pairwise_margins(W, X, y, others).flatten(),
        (n_rows, inputs.shape[1]),
        norm,
        adjoint=lambda v: pairwise_margins_adjoint(v.view(len(y), n_rows - 1), X, y, n_rows, others),
        **solver,
    )
