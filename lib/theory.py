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

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, Unpack, get_args

import torch
from torch import Tensor

from lib import validate
from lib.ocr import SymbolicConfig, SymbolicTask, build_symbolic
from lib.onelayer import OneLayer

Norm = Literal["nuclear", "frobenius"]
"""The norm a max-margin problem minimizes: nuclear (factorized model) or Frobenius (merged model)."""
NORMS: tuple[Norm, ...] = get_args(Norm)


# ----------------------------------------------------------------------------------------------------
# Margins
# ----------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------
# The convex solver
# ----------------------------------------------------------------------------------------------------


def svt(W: Tensor, tau: float) -> Tensor:
    """Singular-value thresholding (the proximal map of ``tau * ||W||_*``): singular values minus ``tau``, floor 0."""
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    try:
        U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    except torch.linalg.LinAlgError:  # LAPACK's divide-and-conquer SVD can fail on many repeated singular values
        return svt_by_eigh(W, tau)
    return (U * (s - tau).clamp_min(0)) @ Vh


def svt_by_eigh(W: Tensor, tau: float) -> Tensor:
    """:func:`svt` through the eigendecomposition of ``W W^T`` (or ``W^T W``): slower and less precise for tiny
    singular values, but it does not fail on repeated ones. ``U diag(max(1 - tau / s, 0)) U^T W``."""
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    if W.shape[0] > W.shape[1]:
        return svt_by_eigh(W.T, tau).T
    evals, U = torch.linalg.eigh(W @ W.T)
    s = evals.clamp_min(0).sqrt()
    keep = torch.where(s > tau, 1 - tau / s.clamp_min(torch.finfo(W.dtype).tiny), torch.zeros_like(s))
    return (U * keep) @ (U.T @ W)


def balanced_factors(W: Tensor) -> tuple[Tensor, Tensor]:
    """The balanced factorization ``W = A B^T``: ``A = U S^{1/2}``, ``B = V S^{1/2}`` from the SVD ``W = U S V^T``.

    Of all factorizations of ``W`` it has the smallest ``(||A||_F^2 + ||B||_F^2) / 2``, and that smallest value is
    ``||W||_*``; it is also balanced, ``A^T A = B^T B = S``.

    Args:
        W: ``(m, n)``.
    Returns:
        ``A`` ``(m, k)`` and ``B`` ``(n, k)``, ``k = min(m, n)``.
    """
    U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    root = s.sqrt()
    return U * root, Vh.T * root


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
    return float(torch.linalg.matrix_norm(W, "nuc" if norm == "nuclear" else "fro"))


@dataclass(frozen=True)
class Solution:
    """A solution of ``min ||W|| s.t. constraints(W) >= 1``.

    Attributes:
        W: ``(m, n)`` the minimizer.
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
    and the duality gap is below ``tol`` (relative).

    Args:
        constraints: ``W (m, n) -> (K,)`` linear in ``W`` (e.g. all pairwise margins).
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
    X, y = inputs.double(), targets.long()
    others = other_rows(y, n_rows)
    return solve_min_norm(
        lambda W: pairwise_margins(W, X, y, others).flatten(),
        (n_rows, inputs.shape[1]),
        norm,
        adjoint=lambda v: pairwise_margins_adjoint(v.view(len(y), n_rows - 1), X, y, n_rows, others),
        **solver,
    )


# ----------------------------------------------------------------------------------------------------
# The OCR task as a max-margin problem, and reading the same block off a trained model
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OCRProblem:
    """The symbolic OCR task reduced to the max-margin problem of the theory.

    As in the paper's analysis, every example is the noise-free sequence ``subject, relation, EOS`` whose
    answer follows. Rows of the problem's matrix are the candidate answers: the fact values, then the
    implication values, then every other token of the vocabulary (the model's softmax runs over all of them).
    Columns are the tokens that occur in the inputs: the subjects, then the relation tokens, then EOS.

    Attributes:
        row_ids: ``(m,)`` token ids of the rows; col_ids: ``(n,)`` token ids of the columns.
        train_tokens: ``(N, 3)`` int64 sequences: every fact, then the training implications.
        train_inputs: ``(N, n)`` 0/1 bag of each training sequence over the columns.
        train_targets: ``(N,)`` row index of the answer; ``train_answers``: its token id.
        test_tokens, test_inputs, test_targets, test_answers: the held-out implications.
        n_facts, n_implications: the first rows are the fact values, the next ones the implication values.
        n_subjects: the first ``n_subjects`` columns are the subjects (in the task's order).
        train_subjects, test_subjects: subject indices whose implication is / is not trained.
    """

    row_ids: Tensor
    col_ids: Tensor
    train_tokens: Tensor
    train_inputs: Tensor
    train_targets: Tensor
    train_answers: Tensor
    test_tokens: Tensor
    test_inputs: Tensor
    test_targets: Tensor
    test_answers: Tensor
    n_facts: int
    n_implications: int
    n_subjects: int
    train_subjects: Tensor
    test_subjects: Tensor

    def implication_block(self, W: Tensor) -> Tensor:
        """The implication x subject block of an answer x input matrix ``(..., m, n)``.

        Returns:
            ``(..., n_implications, n_subjects)``.
        """
        return W[..., self.n_facts : self.n_facts + self.n_implications, : self.n_subjects]


def ocr_problem(task: SymbolicTask) -> OCRProblem:
    """Build the :class:`OCRProblem` of a ``lib.ocr.SymbolicTask``."""
    relations = torch.unique(torch.cat([task.fact_relation_of, task.implication_relation_of]))
    col_ids = torch.cat([task.subject_ids, relations, torch.tensor([task.eos_id])])
    answers = torch.cat([task.fact_value_ids, task.implication_value_ids])
    others = torch.tensor([t for t in range(task.vocab_size) if t not in set(answers.tolist())], dtype=torch.long)
    row_ids = torch.cat([answers, others])
    col_of = torch.full((task.vocab_size,), -1, dtype=torch.long)
    col_of[col_ids] = torch.arange(len(col_ids))
    row_of = torch.full((task.vocab_size,), -1, dtype=torch.long)
    row_of[row_ids] = torch.arange(len(row_ids))

    def examples(subjects: Tensor, relation_of: Tensor, answer_of: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        tokens = torch.stack(
            [task.subject_ids[subjects], relation_of[subjects], torch.full_like(subjects, task.eos_id)], 1
        )
        bags = torch.zeros(len(subjects), len(col_ids)).scatter_add(1, col_of[tokens], torch.ones(tokens.shape))
        return tokens, bags, row_of[answer_of[subjects]], answer_of[subjects]

    everyone = torch.arange(len(task.subject_ids))
    facts = examples(everyone, task.fact_relation_of, task.fact_of)
    implications = examples(task.train_subjects, task.implication_relation_of, task.implication_of)
    train_tokens, train_inputs, train_targets, train_answers = (torch.cat([a, b]) for a, b in zip(facts, implications))
    test_tokens, test_inputs, test_targets, test_answers = examples(
        task.test_subjects, task.implication_relation_of, task.implication_of
    )
    return OCRProblem(
        row_ids=row_ids,
        col_ids=col_ids,
        train_tokens=train_tokens,
        train_inputs=train_inputs,
        train_targets=train_targets,
        train_answers=train_answers,
        test_tokens=test_tokens,
        test_inputs=test_inputs,
        test_targets=test_targets,
        test_answers=test_answers,
        n_facts=len(task.fact_value_ids),
        n_implications=len(task.implication_value_ids),
        n_subjects=len(task.subject_ids),
        train_subjects=task.train_subjects.clone(),
        test_subjects=task.test_subjects.clone(),
    )


def effective_block(model: OneLayer, problem: OCRProblem, eos_id: int) -> Tensor:
    """The trained model's answer x input map on the problem's rows and columns: ``(S, m, n)``.

    With linear attention the logit of answer ``a`` is ``sum_t W_KQ[z_t, EOS] * W_OV[a, z_t]``, so column ``z``
    of the effective map is ``W_OV[:, z]`` scaled by that token's attention score ``W_KQ[z, EOS]``.
    ``inputs @ block.T`` then gives the model's answer logits on the noise-free sequence (subject, relation, EOS).
    """
    with torch.no_grad():
        ov = model.effective_ov(eos_id).cpu()
    return ov[:, problem.row_ids][:, :, problem.col_ids]


def agreement(a: Tensor, b: Tensor) -> dict[str, float]:
    """How close two matrices are up to a positive scale (max-margin solutions are defined in direction).

    Returns:
        ``cosine``: cosine similarity of the flattened matrices; ``relative_error``:
        ``min_c ||c a - b||_F / ||b||_F`` (``= sqrt(1 - cosine^2)`` for ``cosine > 0``).
    """
    a, b = a.double().flatten(), b.double().flatten()
    cosine = float(a @ b / (a.norm() * b.norm()))
    scale = float(a @ b / (a @ a))
    return {"cosine": cosine, "relative_error": float((scale * a - b).norm() / b.norm())}


def theorem2_bound(m_train: int, m_test: int) -> float:
    """Theorem 2's lower bound on (test margin / training margin) of the nuclear-norm solution.

    Args:
        m_train, m_test: training and held-out subjects per fact value.
    Returns:
        ``m_train / (m_train + m_test)``.
    """
    validate.positive_int("m_train", m_train)
    validate.non_negative_int("m_test", m_test)
    return m_train / (m_train + m_test)


# ----------------------------------------------------------------------------------------------------
# Theorem 2 over a grid of (m_train, m_test), and the law the held-out margin follows
# ----------------------------------------------------------------------------------------------------


def numerical_rank(W: Tensor, rel_tol: float = 1e-3) -> int:
    """Number of singular values of ``W`` (2-D) above ``rel_tol`` times the largest (0 for a zero matrix)."""
    validate.positive_number("rel_tol", rel_tol)
    if W.ndim != 2:
        raise ValueError(f"W must be a 2-D matrix, got shape {tuple(W.shape)}")
    s = torch.linalg.svdvals(W.double())
    return int((s > rel_tol * s[0]).sum()) if len(s) and s[0] > 0 else 0


def two_row_nuclear_norm(m_train: int, m_test: int, t: float) -> float:
    """The nuclear norm of one mapping's two-row block in chapter 3's calculation (scale ``a = 1``).

    Rows ``u = (1, ..., 1)`` (the fact value, on all ``m_train + m_test`` subjects) and
    ``v = (1, ..., 1, t, ..., t)`` (the implication value: 1 on the ``m_train`` training subjects, ``t`` on the
    ``m_test`` held-out ones).

    Returns:
        ``||[u; v]||_*``, the sum of the two singular values of the ``(2, m_train + m_test)`` block.
    """
    validate.positive_int("m_train", m_train)
    validate.positive_int("m_test", m_test)
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t):
        raise ValueError(f"t must be a finite number, got {t!r}")
    u = torch.ones(m_train + m_test, dtype=torch.float64)
    v = torch.cat([torch.ones(m_train, dtype=torch.float64), torch.full((m_test,), float(t), dtype=torch.float64)])
    return float(torch.linalg.svdvals(torch.stack([u, v])).sum())


def held_out_margin_law(m_train: int, m_test: int) -> float:
    """The held-out margin of the min-nuclear-norm solution (training margin 1), as measured in chapter 3.

    ``min(1, sqrt(m_train / m_test))``: per fact value, the solution stores the implication of a held-out
    subject at ``t`` times that of a training subject, and the nuclear norm of that two-row block is smallest
    at ``t = sqrt(m_train / m_test)`` (``t = 1`` when that is larger). Not a theorem of the paper: a law
    the solver's numbers follow (see :func:`theorem2_grid` and ``bench/ocr_theory.py``).
    """
    validate.positive_int("m_train", m_train)
    validate.positive_int("m_test", m_test)
    return min(1.0, (m_train / m_test) ** 0.5)


@dataclass(frozen=True)
class GridPoint:
    """The min-nuclear-norm solution of one OCR task with ``m_train`` / ``m_test`` subjects per fact value.

    Attributes:
        m_train, m_test, n_facts: the task.
        margin_min, margin_max: smallest and largest held-out multiclass margin (training margin is 1).
        bound: :func:`theorem2_bound`; law: :func:`held_out_margin_law`.
        rank: :func:`numerical_rank` of the solution (rows: the ``2 n_facts`` answer values).
        gap: the solver's relative duality gap; seconds: solver wall time.
    """

    m_train: int
    m_test: int
    n_facts: int
    margin_min: float
    margin_max: float
    bound: float
    law: float
    rank: int
    gap: float
    seconds: float


def theorem2_grid(
    m_train: Sequence[int], m_test: Sequence[int], *, n_facts: int = 5, seed: int = 0, **solver: Unpack[SolverOptions]
) -> list[GridPoint]:
    """Solve the min-nuclear-norm problem of the symbolic OCR task at every ``(m_train, m_test)`` pair.

    Each task has ``n_facts`` fact values, ``m_train + m_test`` subjects per value (``ocr.SymbolicConfig``
    with ``n_subjects = n_facts * (m_train + m_test)``, ``train_per_fact = m_train``).

    Returns:
        one :class:`GridPoint` per pair, ``m_train`` varying slowest.
    """
    validate.int_at_least("n_facts", n_facts, 2, "a margin needs a competing value")
    points = []
    for mt in m_train:
        for ms in m_test:
            validate.positive_int("m_train", mt)
            validate.positive_int("m_test", ms)
            task = build_symbolic(
                SymbolicConfig(n_subjects=n_facts * (mt + ms), n_facts=n_facts, train_per_fact=mt, seed=seed)
            )
            problem = ocr_problem(task)
            n_answers = problem.n_facts + problem.n_implications
            start = time.perf_counter()
            sol = solve_max_margin(problem.train_inputs, problem.train_targets, n_answers, "nuclear", **solver)
            seconds = time.perf_counter() - start
            margins = multiclass_margins(problem.test_inputs @ sol.W.T, problem.test_targets)
            points.append(
                GridPoint(
                    m_train=mt,
                    m_test=ms,
                    n_facts=n_facts,
                    margin_min=float(margins.min()),
                    margin_max=float(margins.max()),
                    bound=theorem2_bound(mt, ms),
                    law=held_out_margin_law(mt, ms),
                    rank=numerical_rank(sol.W),
                    gap=sol.gap,
                    seconds=seconds,
                )
            )
    return points
