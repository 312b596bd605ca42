"""Chapter 3's theory at sizes the chapter cannot afford: Theorem 2 over a grid at the chapter's task size, and
how close gradient descent on the factorized problem comes to the min-nuclear-norm solution.

Usage: ``PYTHONPATH=$PWD python bench/ocr_theory.py`` (prints a JSON dict; ``bench/run_all.py`` collects it).

1. **Grid.** The min-nuclear-norm solution of the symbolic OCR task with 20 fact values (the chapter's size) at
   every ``(m_train, m_test)`` of a 4 x 6 grid: its smallest held-out margin against Theorem 2's bound
   ``m_train / (m_train + m_test)`` and the law ``min(1, sqrt(m_train / m_test))``; its rank against ``n`` and
   ``2n - 1``. Then the chapter's point ``(1, 3)`` for 2 to 20 fact values (the law does not depend on ``n``).
2. **Direction.** Gradient descent on ``W = A B^T`` (the theory's problem: answer x input block, inner width 128)
   from a Gaussian initialisation of scale 1e-4 (the chapter's), 1e-2 and 1e-1, with the loss of the
   multiclass margins. Plain steps (lr 0.3) until the loss is below 0.05, then normalized steps (lr = 0.01 /
   loss, at most a 1% change of the parameters a step), which let the training margin grow to hundreds within
   minutes: read at the first step with training margin >= 10, 100 and 400, the held-out margin / training
   margin, ``||W||_* / training margin`` (the minimum is the solution's ``||W||_*``), the cosine with the
   solution and the number of singular values above 1/1000 of the largest.

Everything here runs on the CPU whatever ``CIRCUITS_DEVICE`` says, on one torch thread: the problems are float64 and
small, solved by the CPU's convex solver and by float64 gradient descent (mps has no float64), so the seconds printed
are CPU seconds, and no device work needs waiting for.
"""

from __future__ import annotations

import json
import time

import torch
from torch import Tensor

from lib.ocr import symbolic, theorem, theory

GRID_TRAIN = (1, 2, 3, 4)
GRID_TEST = (1, 2, 3, 4, 6, 8)
N_FACTS = (2, 3, 5, 10, 20)
INIT_SCALES = (1e-4, 1e-2, 1e-1)
MARGINS = (10, 100, 400)


def margin_loss(W: Tensor, inputs: Tensor, targets: Tensor, others: Tensor) -> Tensor:
    """Mean cross-entropy through the pairwise margins ``d``: ``log(1 + sum exp(-d))``, exact for tiny losses."""
    d = theory.pairwise_margins(W, inputs, targets, others)
    top = (-d).max(1).values.clamp_min(0)
    small = torch.log1p(torch.exp(-d.clamp_min(0)).sum(1))  # used where every margin is >= 0: no overflow
    big = top + torch.log(torch.exp(-top) + torch.exp(-d - top[:, None]).sum(1))
    return torch.where(top > 0, big, small).mean()


def direction(
    problem: theorem.OCRProblem, solution: theory.Solution, scale: float, seed: int = 0, max_steps: int = 40000
) -> dict:
    """Factorized gradient descent from initial scale ``scale``; the numbers at the first step past each margin."""
    X, y = problem.train_inputs.double(), problem.train_targets
    m, n = solution.W.shape
    others = theory.other_rows(y, m)
    g = torch.Generator().manual_seed(seed)
    A = (torch.randn(m, 128, generator=g, dtype=torch.float64) * scale).requires_grad_()
    B = (torch.randn(n, 128, generator=g, dtype=torch.float64) * scale).requires_grad_()
    target = solution.W.double()
    out: dict = {}
    start = time.perf_counter()
    for step in range(1, max_steps + 1):
        loss = margin_loss(A @ B.T, X, y, others)
        gA, gB = torch.autograd.grad(loss, [A, B])
        lr = 0.3 if loss.item() > 0.05 else 0.01 / loss.item()
        grad_norm = float((gA.norm() ** 2 + gB.norm() ** 2).sqrt())
        param_norm = float((A.detach().norm() ** 2 + B.detach().norm() ** 2).sqrt())
        lr = min(lr, 0.01 * param_norm / max(grad_norm, 1e-300))
        with torch.no_grad():
            A -= lr * gA
            B -= lr * gB
            W = A @ B.T
            train_margin = float(theory.multiclass_margins(X @ W.T, y).min())
        pending = [k for k in MARGINS if f"margin {k}" not in out]
        if pending and train_margin >= pending[0]:
            test = float(theory.multiclass_margins(problem.test_inputs.double() @ W.T, problem.test_targets).min())
            out[f"margin {pending[0]}"] = (
                f"step {step}, held-out / training margin {test / train_margin:.3f}, "
                f"nuclear norm / margin {float(torch.linalg.svdvals(W).sum()) / train_margin:.2f}, "
                f"cosine {theorem.agreement(W, target)['cosine']:.3f}, {theorem.numerical_rank(W)} directions"
            )
            if len(pending) == 1:
                break
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out


def run() -> dict:
    torch.set_num_threads(1)
    results: dict = {}
    start = time.perf_counter()
    points = theorem.theorem2_grid(GRID_TRAIN, GRID_TEST, n_facts=20)
    results["grid n=20: points"] = len(points)
    results["grid n=20: largest |margin - law|"] = max(abs(p.margin_min - p.law) for p in points)
    results["grid n=20: largest spread of held-out margins"] = max(p.margin_max - p.margin_min for p in points)
    results["grid n=20: smallest margin / bound"] = round(min(p.margin_min / p.bound for p in points), 4)
    results["grid n=20: rank n where m_train >= m_test, else 2n - 1"] = all(
        p.rank == (20 if p.m_train >= p.m_test else 39) for p in points
    )
    results["grid n=20: largest duality gap"] = max(p.gap for p in points)
    results["grid n=20: seconds"] = round(time.perf_counter() - start, 1)
    at_13 = [theorem.theorem2_grid([1], [3], n_facts=n)[0] for n in N_FACTS]
    results["(1, 3), n = 2, 3, 5, 10, 20: margins"] = ", ".join(f"{p.margin_min:.5f}" for p in at_13)
    results["(1, 3), n = 2, 3, 5, 10, 20: ranks"] = ", ".join(str(p.rank) for p in at_13)

    task = symbolic.build_symbolic()
    problem = theorem.ocr_problem(task)
    n_answers = problem.n_facts + problem.n_implications
    solution = theory.solve_max_margin(problem.train_inputs, problem.train_targets, n_answers, "nuclear")
    held_out = theory.multiclass_margins(problem.test_inputs @ solution.W.T, problem.test_targets)
    results["solution"] = (
        f"held-out margin {float(held_out.min()):.3f}, nuclear norm {solution.value:.2f}, "
        f"{theorem.numerical_rank(solution.W)} directions"
    )
    for scale in INIT_SCALES:
        for key, value in direction(problem, solution, scale).items():
            results[f"GD from init {scale:g}, {key}"] = value
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
