from types import SimpleNamespace

import pytest
import torch

from lib.ocr import theorem
from lib.ocr.theorem import agreement, ocr_problem, theorem2_bound, two_row_nuclear_norm
from lib.ocr.theory import NORMS, matrix_norm, multiclass_margins, solve_max_margin, solve_min_norm, svt


def test_svt_shrinks_singular_values():
    W = torch.diag(torch.tensor([3.0, 1.0, 0.5]))
    torch.testing.assert_close(svt(W, 0.75), torch.diag(torch.tensor([2.25, 0.25, 0.0])))


def test_known_completion_nuclear_vs_frobenius():
    """Entries (0,0), (0,1), (1,0) must be >= 1: the nuclear norm fills the free entry with 1 (rank one,
    norm 2), the Frobenius norm leaves it at 0 (norm sqrt 3)."""
    rows, cols = torch.tensor([0, 0, 1]), torch.tensor([0, 1, 0])
    nuc = solve_min_norm(lambda W: W[rows, cols], (2, 2), "nuclear")
    fro = solve_min_norm(lambda W: W[rows, cols], (2, 2), "frobenius")
    torch.testing.assert_close(nuc.W, torch.ones(2, 2), atol=1e-3, rtol=0)
    torch.testing.assert_close(fro.W, torch.tensor([[1.0, 1.0], [1.0, 0.0]]), atol=1e-3, rtol=0)
    assert nuc.value == pytest.approx(2.0, abs=1e-4) and fro.value == pytest.approx(3**0.5, abs=1e-4)
    for sol in (nuc, fro):
        assert sol.gap < 1e-4 and sol.dual_norm == pytest.approx(1.0, abs=1e-3) and sol.min_constraint > 1 - 1e-4


def test_max_margin_two_classes_is_the_svm():
    sol = solve_max_margin(torch.tensor([[1.0, 0.0]]), torch.tensor([0]), 2, "frobenius")
    torch.testing.assert_close(sol.W, torch.tensor([[0.5, 0.0], [-0.5, 0.0]]), atol=1e-4, rtol=0)


def test_multiclass_margins():
    logits = torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 5.0]])
    torch.testing.assert_close(multiclass_margins(logits, torch.tensor([0, 2])), torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(
        multiclass_margins(logits[None].repeat(2, 1, 1), torch.tensor([1, 0])), torch.tensor([[-2.0, -5.0]] * 2)
    )


def tiny_task():
    """4 subjects, 2 facts b0,b1 -> implications c0,c1; subjects 0,1 train, 2,3 test (one of each per fact)."""
    # ids: subjects 0-3, b 4-5, c 6-7, r1 8, r2 9, eos 10
    return SimpleNamespace(
        vocab_size=11,
        subject_ids=torch.arange(4),
        fact_of=torch.tensor([4, 5, 4, 5]),
        implication_of=torch.tensor([6, 7, 6, 7]),
        fact_relation_of=torch.full((4,), 8),
        implication_relation_of=torch.full((4,), 9),
        train_subjects=torch.tensor([0, 1]),
        test_subjects=torch.tensor([2, 3]),
        fact_value_ids=torch.tensor([4, 5]),
        implication_value_ids=torch.tensor([6, 7]),
        eos_id=10,
    )


def test_ocr_problem_and_theorem_2_on_a_tiny_task():
    p = ocr_problem(tiny_task())
    assert p.train_inputs.shape == (6, 7) and p.test_inputs.shape == (2, 7) and len(p.row_ids) == 11
    assert p.train_tokens[0].tolist() == [0, 8, 10] and p.test_tokens[0].tolist() == [2, 9, 10]
    m = p.n_facts + p.n_implications
    margins = {}
    for norm in ("nuclear", "frobenius"):
        sol = solve_max_margin(p.train_inputs, p.train_targets, m, norm)
        assert sol.gap < 1e-4 and sol.min_constraint > 1 - 1e-4
        margins[norm] = multiclass_margins(p.test_inputs @ sol.W.T, p.test_targets)
    assert margins["frobenius"].abs().max() < 1e-3
    assert margins["nuclear"].min() >= theorem2_bound(1, 1) - 1e-3


def test_agreement_is_scale_free():
    a = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    assert agreement(3 * a, a) == pytest.approx({"cosine": 1.0, "relative_error": 0.0}, abs=1e-6)


def test_norms_are_the_literal_values():
    assert NORMS == ("nuclear", "frobenius")
    W = torch.diag(torch.tensor([3.0, 4.0]))
    assert matrix_norm(W, "nuclear") == pytest.approx(7.0) and matrix_norm(W, "frobenius") == pytest.approx(5.0)


def test_bad_input_raises():
    with pytest.raises(ValueError, match=r"norm must be one of \['nuclear', 'frobenius'\], got 'spectral'"):
        solve_min_norm(lambda W: W.flatten(), (2, 2), "spectral")
    with pytest.raises(ValueError, match="norm must be one of"):
        matrix_norm(torch.eye(2), "spectral")
    with pytest.raises(ValueError, match="outer must be a positive integer, got 0"):
        solve_max_margin(torch.ones(1, 2), torch.tensor([0]), 2, outer=0)
    with pytest.raises(ValueError, match="n_rows"):
        solve_max_margin(torch.ones(1, 2), torch.tensor([3]), 2)
    with pytest.raises(ValueError, match="targets"):
        multiclass_margins(torch.zeros(2, 3), torch.tensor([0]))
    with pytest.raises(ValueError, match="m_train must be a positive integer, got 0"):
        theorem2_bound(0, 3)
    with pytest.raises(ValueError, match="m_test must be a non-negative integer, got -1"):
        theorem2_bound(1, -1)
    assert theorem2_bound(1, 3) == 0.25


def test_pairwise_margins_adjoint_is_the_autograd_gradient():
    from lib.ocr.theory import other_rows, pairwise_margins, pairwise_margins_adjoint

    g = torch.Generator().manual_seed(1)
    X = torch.randint(0, 3, (7, 5), generator=g).double()
    y = torch.randint(0, 4, (7,), generator=g)
    V = torch.randn(7, 3, generator=g, dtype=torch.float64)
    W = torch.randn(4, 5, generator=g, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad((pairwise_margins(W, X, y) * V).sum(), W)
    torch.testing.assert_close(pairwise_margins_adjoint(V, X, y, 4), grad)
    assert other_rows(torch.tensor([0, 2]), 3).tolist() == [[1, 2], [0, 1]]


def test_closed_form_adjoint_gives_the_autograd_solution():
    p = ocr_problem(tiny_task())
    X, y, m = p.train_inputs.double(), p.train_targets, p.n_facts + p.n_implications
    from lib.ocr.theory import pairwise_margins

    # the same algorithm with either adjoint: the same iterates (a few outer steps are enough to compare)
    by_autograd = solve_min_norm(lambda W: pairwise_margins(W, X, y).flatten(), (m, X.shape[1]), "nuclear", outer=3)
    closed = solve_max_margin(p.train_inputs, p.train_targets, m, "nuclear", outer=3)
    torch.testing.assert_close(closed.W, by_autograd.W, atol=1e-6, rtol=0)
    assert closed.iterations == by_autograd.iterations == 450


def test_numerical_rank():
    from lib.ocr.theorem import numerical_rank

    assert numerical_rank(torch.diag(torch.tensor([3.0, 1e-2, 1e-5]))) == 2
    assert numerical_rank(torch.diag(torch.tensor([3.0, 1e-2, 1e-5])), rel_tol=1e-6) == 3
    assert numerical_rank(torch.zeros(2, 3)) == 0
    with pytest.raises(ValueError, match="W must be a 2-D matrix"):
        numerical_rank(torch.ones(3))
    with pytest.raises(ValueError, match="rel_tol must be"):
        numerical_rank(torch.eye(2), rel_tol=0)


def test_held_out_margin_law():
    from lib.ocr.theorem import held_out_margin_law

    assert held_out_margin_law(1, 4) == pytest.approx(0.5) and held_out_margin_law(3, 2) == 1.0
    with pytest.raises(ValueError, match="m_test must be a positive integer, got 0"):
        held_out_margin_law(1, 0)


def test_theorem2_grid_follows_the_law_and_the_rank_of_the_solution_jumps():
    """Two fact values: the held-out margin is min(1, sqrt(m_train / m_test)), above Theorem 2's bound; the
    solution has rank n (fact and implication rows agree on every subject) when m_train >= m_test, else 2n - 1."""
    from lib.ocr.theorem import theorem2_grid

    points = theorem2_grid([1, 2], [1, 3], n_facts=2)
    assert [(q.m_train, q.m_test) for q in points] == [(1, 1), (1, 3), (2, 1), (2, 3)]
    for q in points:
        assert q.gap < 1e-5 and q.margin_max - q.margin_min < 1e-4
        assert q.margin_min == pytest.approx(q.law, abs=1e-4) and q.margin_min > q.bound
        assert q.rank == (2 if q.m_train >= q.m_test else 3)
    with pytest.raises(ValueError, match="n_facts must be"):
        theorem2_grid([1], [1], n_facts=1)


def test_svt_by_eigh_matches_svt():
    from lib.ocr.theory import svt_by_eigh

    g = torch.Generator().manual_seed(2)
    for shape in ((4, 7), (7, 4)):
        W = torch.randn(*shape, generator=g, dtype=torch.float64)
        torch.testing.assert_close(svt_by_eigh(W, 0.8), svt(W, 0.8))
    repeated = torch.eye(6, dtype=torch.float64)[:4] * 2.0  # four equal singular values
    torch.testing.assert_close(svt_by_eigh(repeated, 0.5), repeated * 0.75)
    torch.testing.assert_close(svt_by_eigh(repeated, 3.0), torch.zeros(4, 6, dtype=torch.float64))


# --- balanced_factors and proximal_step ------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 7), (4, 4)])
def test_balanced_factors_reach_the_nuclear_norm(shape):
    from lib.ocr.theory import balanced_factors

    g = torch.Generator().manual_seed(0)
    W = torch.randn(*shape, generator=g, dtype=torch.float64)
    A, B = balanced_factors(W)
    assert torch.allclose(A @ B.T, W)
    cost = 0.5 * (A.square().sum() + B.square().sum())
    assert torch.isclose(cost, torch.linalg.matrix_norm(W, "nuc"))
    assert torch.allclose(A.T @ A, B.T @ B)
    # any other factorization (A R, B R^{-T}) costs more
    R = torch.randn(A.shape[1], A.shape[1], generator=g, dtype=torch.float64)
    other = 0.5 * ((A @ R).square().sum() + (B @ torch.linalg.inv(R).T).square().sum())
    assert other > cost


def test_proximal_step_is_gradient_then_svt():
    from lib.ocr.theory import proximal_step, svt

    g = torch.Generator().manual_seed(1)
    W = torch.randn(6, 4, generator=g)
    inputs = torch.randn(9, 4, generator=g)
    targets = torch.randint(0, 6, (9,), generator=g)
    Wg = W.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(torch.nn.functional.cross_entropy(inputs @ Wg.T, targets), Wg)
    assert torch.allclose(proximal_step(W, inputs, targets, 0.5, 0.2), svt(W - 0.5 * grad, 0.1), atol=1e-6)
    assert torch.allclose(proximal_step(W, inputs, targets, 0.5, 0.0), W - 0.5 * grad, atol=1e-6)
    with pytest.raises(ValueError, match="lam"):
        proximal_step(W, inputs, targets, 0.5, -1.0)


@pytest.mark.parametrize("m_train, m_test", [(1, 3), (1, 8), (2, 2), (3, 1)])
def test_two_row_nuclear_norm_matches_the_formula_and_its_minimum(m_train, m_test):
    for t in (0.0, 0.25, 0.5, 1.0):  # the chapter's closed form of ||M||_*^2, for t <= 1
        squared = 2 * m_train + m_test + m_test * t**2 + 2 * (m_train * m_test) ** 0.5 * (1 - t)
        assert two_row_nuclear_norm(m_train, m_test, t) ** 2 == pytest.approx(squared, abs=1e-9)
    grid = [i / 1000 for i in range(1501)]
    best = min(grid, key=lambda t: two_row_nuclear_norm(m_train, m_test, t))
    assert best == pytest.approx(min(1.0, (m_train / m_test) ** 0.5), abs=2e-3)


@pytest.mark.parametrize("args, match", [((0, 1, 0.5), "m_train"), ((1, 0, 0.5), "m_test"), ((1, 1, "x"), "t must be")])
def test_two_row_nuclear_norm_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        two_row_nuclear_norm(*args)


def test_factorized_descent_respects_each_members_width_and_fits_a_separable_problem():
    from lib.ocr.theorem import factorized_descent, numerical_rank

    inputs = torch.eye(6)
    targets = torch.tensor([0, 1, 2, 3, 0, 1])
    W = factorized_descent(inputs, targets, 4, [1, 4], steps=500, lr=1.0, init_scale=0.1)
    assert W.shape == (2, 4, 6)
    assert numerical_rank(W[0]) == 1
    assert multiclass_margins(inputs @ W[1].T, targets).min() > 0  # width 4 fits all four classes
    assert multiclass_margins(inputs @ W[0].T, targets).min() < 0  # width 1 cannot


def test_factorized_descent_members_are_independent_of_each_other():
    from lib.ocr.theorem import factorized_descent

    inputs, targets = torch.eye(5), torch.tensor([0, 1, 2, 0, 1])
    both = factorized_descent(inputs, targets, 3, [3, 3], steps=20)
    alone = factorized_descent(inputs, targets, 3, [3], steps=20)
    torch.testing.assert_close(both[0], alone[0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"targets": torch.tensor([0, 5])}, "targets"),
        ({"ranks": []}, "ranks"),
        ({"ranks": [0]}, "rank"),
        ({"steps": 0}, "steps"),
        ({"init_scale": 0.0}, "init_scale"),
        ({"inputs": torch.ones(3)}, "inputs"),
    ],
)
def test_factorized_descent_bad_input_raises(kwargs, match):
    from lib.ocr.theorem import factorized_descent

    args = {"inputs": torch.eye(2), "targets": torch.tensor([0, 1]), "n_rows": 2, "ranks": [1]} | kwargs
    with pytest.raises(ValueError, match=match):
        factorized_descent(**args)


def test_margin_ratio_of_the_min_nuclear_norm_solution_is_the_law(monkeypatch):
    """With the solution as the model's effective map, held-out over training margin is min(1, sqrt(1 / 1)) = 1;
    with the min-Frobenius one it is 0 (Theorem 2's two solutions)."""
    from lib.ocr import theorem

    p = ocr_problem(tiny_task())
    m = p.n_facts + p.n_implications
    for norm, expected in (("nuclear", theorem.held_out_margin_law(1, 1)), ("frobenius", 0.0)):
        W = solve_max_margin(p.train_inputs, p.train_targets, m, norm).W
        monkeypatch.setattr(theorem, "effective_block", lambda model, problem, eos_id, W=W: W[None].float())
        ratio = theorem.margin_ratio(None, p, eos_id=10)  # type: ignore[arg-type]
        assert ratio.shape == (1,) and float(ratio[0]) == pytest.approx(expected, abs=1e-3)


def test_the_shipped_sample_efficiency_grid_is_reproduced_by_its_first_seed(tmp_path):
    """bench/ocr_sample_efficiency.py's seed 0 at the chapters' point (1, 3), rerun: the shipped JSON's numbers."""
    import sys
    from pathlib import Path

    from lib.ocr import theorem

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import ocr_sample_efficiency

    shipped = theorem.load_sample_efficiency()
    (row,) = [p for p in shipped["points"] if (p["m_train"], p["m_test"]) == (1, 3)]
    assert row["law"] == pytest.approx(theorem.held_out_margin_law(1, 3))
    again = ocr_sample_efficiency.point(1, 3, seed=0, arm="factorized")
    assert again["margin ratio"] == pytest.approx(row["factorized"]["margin ratio"][0], abs=1e-3)
    assert again["held-out accuracy"] == pytest.approx(row["factorized"]["held-out accuracy"][0], abs=1e-6)
    with pytest.raises(ValueError, match="no sample-efficiency results"):
        theorem.load_sample_efficiency(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(ValueError, match=r"lacks \['points'\]"):
        theorem.load_sample_efficiency(tmp_path / "other.json")


def _held_out_implication_logits(model, problem, eos_id):
    """(S, held-out questions, implication values) logits of a trained model on the noise-free sequences."""
    block = theorem.effective_block(model, problem, eos_id).double()
    rows = slice(problem.n_facts, problem.n_facts + problem.n_implications)
    return (problem.test_inputs.double() @ block.transpose(1, 2))[..., rows]


def test_theorem_3_merged_with_trainable_attention_keeps_held_out_implications_tied():
    from lib.core import train
    from lib.ocr import onelayer
    from lib.ocr.symbolic import SymbolicConfig, build_symbolic

    task = build_symbolic(SymbolicConfig(n_subjects=12, n_facts=4, train_per_fact=1, seed=0))
    problem = ocr_problem(task)
    batch = (problem.train_tokens, problem.train_answers)
    config = train.TrainConfig(steps=300, lr=0.3, optimizer="sgd", progress=False)
    logits, moved = {}, {}
    for arm in ("merged", "factorized"):
        cfg = onelayer.OneLayerConfig(task.vocab_size, d_embed=task.vocab_size, parameterization=arm)
        model = theorem.symmetric_start(onelayer.OneLayer(cfg).double())
        assert model.ov().abs().max() == 0 and (model.W_KQ == 1).all()
        train.train(model, lambda batch_size, generator: batch, onelayer.per_seed_loss, config)
        logits[arm] = _held_out_implication_logits(model, problem, task.eos_id)
        moved[arm] = float((model.W_KQ.detach() - 1).abs().max())
    targets = problem.test_targets - problem.n_facts
    merged = logits["merged"]
    assert moved["merged"] > 0.1, "the attention is trained"
    assert (merged.amax(-1) - merged.amin(-1)).max() < 1e-12 * merged.abs().max(), "Theorem 3: tied"
    assert multiclass_margins(logits["factorized"], targets).min() > 0, "the factorized model is not tied"


def test_symmetric_start_rejects_a_narrow_factorization():
    from lib.ocr import onelayer

    model = onelayer.OneLayer(onelayer.OneLayerConfig(11, d_embed=16, rank=4))
    with pytest.raises(ValueError, match="full rank"):
        theorem.symmetric_start(model)
