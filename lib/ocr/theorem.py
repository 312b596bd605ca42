"""The OCR task as the theory's max-margin problem, the same block read off a trained model,
Theorem 2 over a grid of (m_train, m_test), and Theorem 3's symmetric start (Huang et al. 2025, section 4;
chapter 3).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Unpack

import torch
from torch import Tensor

from lib.core import seeds, shipped, validate
from lib.ocr.onelayer import OneLayer
from lib.ocr.symbolic import SymbolicConfig, SymbolicTask, build_symbolic
from lib.ocr.theory import SolverOptions, multiclass_margins, solve_max_margin


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
    """Build the :class:`OCRProblem` of a ``lib.ocr.symbolic.SymbolicTask``."""
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
    a, b = a.cpu().double().flatten(), b.cpu().double().flatten()
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


def numerical_rank(W: Tensor, rel_tol: float = 1e-3) -> int:
    """Number of singular values of ``W`` (2-D) above ``rel_tol`` times the largest (0 for a zero matrix)."""
    validate.positive_number("rel_tol", rel_tol)
    if W.ndim != 2:
        raise ValueError(f"W must be a 2-D matrix, got shape {tuple(W.shape)}")
    s = torch.linalg.svdvals(W.cpu().double())
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
    m_train: Sequence[int],
    m_test: Sequence[int],
    *,
    n_facts: int = 5,
    seed: int = seeds.seed(0),
    **solver: Unpack[SolverOptions],
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


def factorized_descent(
    inputs: Tensor,
    targets: Tensor,
    n_rows: int,
    ranks: Sequence[int],
    *,
    steps: int = 5000,
    lr: float = 1.0,
    init_scale: float = 1e-4,
    seed: int = seeds.seed(0),
) -> Tensor:
    """Full-batch gradient descent on ``W = A B^T`` at inner width ``r``, one independent member per entry of ``ranks``.

    The loss is the mean cross-entropy of logits ``inputs @ W.T`` over ``n_rows`` answers (the theory's problem with
    the factors trained instead of ``W``). ``A`` ``(n_rows, r)`` and ``B`` ``(n, r)`` start N(0, init_scale^2), member
    ``i`` from ``torch.Generator().manual_seed(seed + i)``.

    Args:
        inputs: ``(N, n)`` float bags of tokens; targets: ``(N,)`` int64 answer rows in ``[0, n_rows)``.
    Returns:
        ``(len(ranks), n_rows, n)``: every member's final ``W``.
    """
    if inputs.ndim != 2 or targets.shape != inputs.shape[:1]:
        raise ValueError(f"inputs must be (N, n) and targets (N,), got {tuple(inputs.shape)}, {tuple(targets.shape)}")
    validate.positive_int("n_rows", n_rows)
    if targets.numel() and not 0 <= int(targets.min()) <= int(targets.max()) < n_rows:
        raise ValueError(f"targets must lie in [0, {n_rows}), got {int(targets.min())}..{int(targets.max())}")
    if not ranks:
        raise ValueError("ranks must be a non-empty sequence of positive ints")
    for r in ranks:
        validate.positive_int("a rank", r)
    validate.positive_int("steps", steps)
    validate.positive_number("lr", lr)
    validate.positive_number("init_scale", init_scale)
    validate.seed(seed)
    R, n = max(ranks), inputs.shape[1]
    mask = torch.stack([(torch.arange(R) < r) for r in ranks])[:, None, :].to(
        inputs
    )  # (S, 1, R), inputs' dtype, device
    gens = [torch.Generator().manual_seed(seed + i) for i in range(len(ranks))]
    A = torch.stack([torch.randn(n_rows, R, generator=g) for g in gens]).to(inputs) * init_scale * mask
    B = torch.stack([torch.randn(n, R, generator=g) for g in gens]).to(inputs) * init_scale * mask
    A.requires_grad_(True)
    B.requires_grad_(True)
    answers = targets.expand(len(ranks), -1).reshape(-1)
    for _ in range(steps):
        logits = inputs @ (A @ B.transpose(1, 2)).transpose(1, 2)  # (S, N, n_rows)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, n_rows), answers) * len(ranks)
        gA, gB = torch.autograd.grad(loss, (A, B))
        with torch.no_grad():
            A -= lr * gA * mask
            B -= lr * gB * mask
    return (A @ B.transpose(1, 2)).detach()


def symmetric_start(model: OneLayer) -> OneLayer:
    """Put every member of ``model`` at Theorem 3's symmetric start, in place, and return it (chapter 3).

    ``W_KQ`` all ones (every token gets attention score 1, the theory's frozen value); merged: ``W_OV = 0``;
    factorized: ``W_O = 0`` and ``W_V`` the ``d x d`` identity. Both compute the zero map ``W_OV = W_O W_V^T = 0``,
    and relabelling the tokens (the same permutation ``P`` of the rows and columns: ``P W P^T``, and ``P W_O P^T``,
    ``P W_V P^T`` for the factors, whose product it maps to ``P W_OV P^T``) leaves each of these matrices unchanged:
    the start does not tell one mapping from another.

    Raises:
        ValueError: a factorized member has rank below ``d_embed`` (a partial identity is not symmetric).
    """
    config = model.config
    if config.parameterization == "factorized" and min(config.ranks) < config.d_embed:
        raise ValueError(
            f"the symmetric factorized start needs full rank d_embed={config.d_embed}, got ranks {config.ranks}"
        )
    with torch.no_grad():
        model.W_KQ.fill_(1.0)
        if config.parameterization == "merged":
            model.W_OV.zero_()
        else:
            model.W_O.zero_()
            model.W_V.copy_(torch.eye(config.d_embed, dtype=model.W_V.dtype, device=model.W_V.device))
    return model


def margin_ratio(model: OneLayer, problem: OCRProblem, eos_id: int) -> Tensor:
    """Held-out over training margin of a trained model on the noise-free sequences: ``(S,)``, one per member.

    The mean multiclass margin (over all rows of the problem) of the held-out implications, divided by the mean
    margin of the training implications (the facts left out), from :func:`effective_block`. For the
    min-nuclear-norm solution every training margin is 1 and this is :func:`held_out_margin_law`.
    """
    block = effective_block(model, problem, eos_id).cpu().double()  # (S, m, n); float64 on the CPU (not on mps)
    implications = problem.train_targets.cpu() >= problem.n_facts
    train = multiclass_margins(
        problem.train_inputs.cpu()[implications].double() @ block.transpose(1, 2),
        problem.train_targets.cpu()[implications],
    )
    test = multiclass_margins(problem.test_inputs.cpu().double() @ block.transpose(1, 2), problem.test_targets.cpu())
    return test.mean(-1) / train.mean(-1)


SAMPLE_EFFICIENCY_PATH = shipped.DATA / "ocr_sample_efficiency.json"
"""The grid of ``bench/ocr_sample_efficiency.py --json`` that chapter 3 shows."""


def load_sample_efficiency(path: Path | str = SAMPLE_EFFICIENCY_PATH) -> dict:
    """The JSON written by ``bench/ocr_sample_efficiency.py --json``: per ``(m_train, m_test)`` point the law and,
    per parameterization, every seed's :func:`margin_ratio` and held-out accuracy."""
    made_by = "bench/ocr_sample_efficiency.py --json"
    return shipped.load_results(path, ("points",), what="sample-efficiency results", made_by=made_by)
