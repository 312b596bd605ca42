import math

import pytest
import torch

from lib.core.train import TrainConfig, train
from lib.ocr.onelayer import (
    ATTENTIONS,
    PARAMETERIZATIONS,
    VALUE_INITS,
    OneLayer,
    OneLayerConfig,
    factorize,
    forward_reference,
    member,
    merge,
    per_seed_batches,
    per_seed_loss,
)
from lib.ocr.training import candidate_accuracy, candidate_loss

V, D = 12, 16


def tokens(n=5, T=6, seed=0):
    return torch.randint(0, V, (n, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("parameterization", ["factorized", "merged"])
@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_shapes(parameterization, attention):
    model = OneLayer(OneLayerConfig(V, D, parameterization, attention=attention, n_seeds=3, init_scale=0.1))
    assert model(tokens()).shape == (3, 5, V)
    assert model(torch.stack([tokens(seed=i) for i in range(3)])).shape == (3, 5, V)
    assert model.ov().shape == (3, D, D)
    assert per_seed_loss(model, (tokens(), torch.zeros(5, dtype=torch.long))).shape == (3,)


def test_forward_matches_the_one_hot_formula():
    model = OneLayer(OneLayerConfig(V, D, rank=4, n_seeds=2, init_scale=0.3))
    x = tokens()
    logits = model(x)
    for s in range(2):
        for b in range(len(x)):
            f = forward_reference(model.W_O[s], model.W_V[s], model.W_KQ[s], x[b])
            torch.testing.assert_close(logits[s, b], f[:V])


@pytest.mark.parametrize("parameterization", ["factorized", "merged"])
def test_output_ignores_the_order_of_all_but_the_last_token(parameterization):
    """A bag of tokens seen from the last one: why the relation token's position cannot matter (lib.ocr's layouts)."""
    model = OneLayer(OneLayerConfig(V, D, parameterization, n_seeds=2, init_scale=0.3))
    x = tokens(n=8, T=7)
    shuffled = torch.cat([x[:, :-1][:, torch.randperm(6, generator=torch.Generator().manual_seed(1))], x[:, -1:]], 1)
    assert not torch.equal(x, shuffled)
    torch.testing.assert_close(model(shuffled), model(x))
    moved_last = torch.cat([x[:, 1:], x[:, :1]], 1)  # another token at the query position
    assert not torch.allclose(model(moved_last), model(x))


def test_merge_and_factorize_compute_the_same_function():
    fact = OneLayer(OneLayerConfig(V, D, n_seeds=2, init_scale=0.3))
    merged = merge(fact)
    x = tokens()
    torch.testing.assert_close(merged(x), fact(x))
    back = factorize(merged)
    torch.testing.assert_close(back(x), fact(x), atol=1e-5, rtol=1e-4)


def test_rank_mask_limits_the_rank_per_member():
    model = OneLayer(OneLayerConfig(V, D, rank=(1, 3, 16), n_seeds=3, init_scale=0.3))
    ranks = torch.linalg.matrix_rank(model.ov(), rtol=1e-5)
    assert ranks.tolist() == [1, 3, 16]


def test_value_init_identity_starts_w_v_at_the_scaled_identity():
    model = OneLayer(OneLayerConfig(V, D, rank=(3, 16), n_seeds=2, init_scale=1e-4, value_init="identity"))
    expected = torch.eye(D, 16) * 1e-4
    torch.testing.assert_close(model.W_V[1], expected, rtol=0, atol=0)
    torch.testing.assert_close(model.W_V[0], expected * (torch.arange(16) < 3), rtol=0, atol=0)  # rank 3: 3 columns
    assert torch.linalg.matrix_rank(model.ov(), rtol=1e-5).tolist() == [3, 16]
    # W_O and W_KQ stay Gaussian with std init_scale, one draw per member
    for W in (model.W_O[1], model.W_KQ[1]):
        assert 0.7e-4 < float(W.detach().std()) < 1.3e-4
    assert not torch.equal(model.W_O[0, :, :3], model.W_O[1, :, :3])


def test_gaussian_init_scale_sets_the_standard_deviation():
    d = 128
    model = OneLayer(OneLayerConfig(V, d, init_scale=d**-0.5))  # the official rank sweep's N(0, 1/d)
    for W in (model.W_O, model.W_V, model.W_KQ):
        assert abs(float(W.detach().std()) * d**0.5 - 1) < 0.03
    assert OneLayerConfig(V, D).value_init == "gaussian" and VALUE_INITS == ("gaussian", "identity")


def test_frozen_kq_is_uniform_attention():
    model = OneLayer(OneLayerConfig(V, D, parameterization="merged", train_kq=False, init_scale=0.3))
    assert "W_KQ" not in dict(model.named_parameters())
    x = tokens()
    expected = torch.nn.functional.one_hot(x, D).float().sum(1) @ model.W_OV[0].T
    torch.testing.assert_close(model(x)[0], expected[:, :V])


@pytest.mark.parametrize("parameterization", ["factorized", "merged"])
def test_batched_members_train_exactly_as_alone(parameterization):
    data = tokens(n=32, seed=1), torch.randint(0, V, (32,), generator=torch.Generator().manual_seed(2))
    cfg = TrainConfig(steps=25, lr=1e-2, weight_decay=0.03, progress=False)
    batched = OneLayer(OneLayerConfig(V, D, parameterization, n_seeds=3, seed=10, init_scale=0.1))
    hist = train(batched, lambda b, g: data, per_seed_loss, cfg)
    alone = OneLayer(OneLayerConfig(V, D, parameterization, n_seeds=1, seed=11, init_scale=0.1))
    hist1 = train(alone, lambda b, g: data, per_seed_loss, cfg)
    torch.testing.assert_close(hist.loss[:, 1], hist1.loss[:, 0])
    torch.testing.assert_close(member(batched, 1).ov(), alone.ov())


def test_per_seed_batches_gives_each_member_its_own_batch():
    def sample(n, g):
        return torch.randint(0, V, (n, 4), generator=g), torch.randint(0, V, (n,), generator=g)

    x, y = per_seed_batches(sample, 3)(8, torch.Generator().manual_seed(0))
    assert x.shape == (3, 8, 4) and y.shape == (3, 8)
    assert not torch.equal(x[0], x[1])


def test_per_seed_batches_keep_the_training_mix_per_member():
    """Every member's batch holds equal thirds of train facts, train implications and test facts."""
    from lib.ocr.symbolic import build_symbolic

    task = build_symbolic()
    x, y = per_seed_batches(task.train_batch, 8)(252, torch.Generator().manual_seed(0))
    train_subject_tokens = task.subject_ids[task.train_subjects]
    for s in range(8):
        implication = x[s, :, -2] == task.implication_relation_of[0]
        has_train_subject = torch.isin(x[s], train_subject_tokens).any(1)
        assert int(implication.sum()) == 84  # train implications: a third
        assert int((~implication & has_train_subject).sum()) == 84  # train facts
        assert int((~implication & ~has_train_subject).sum()) == 84  # test facts
        assert torch.isin(y[s][implication], task.implication_value_ids).all()
        assert torch.isin(y[s][~implication], task.fact_value_ids).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rank": 0}, "rank must be a positive integer, got 0"),
        ({"rank": D + 1}, rf"rank must be an integer in \[1, d_embed={D}\], got \[{D + 1}\]"),
        ({"rank": (2, True), "n_seeds": 2}, "rank must be a positive integer, got True"),
        ({"parameterization": "tied"}, r"parameterization must be one of \['factorized', 'merged'\], got 'tied'"),
        ({"attention": "relu"}, r"attention must be one of \['linear', 'softmax'\], got 'relu'"),
        ({"n_seeds": 0}, "n_seeds must be a positive integer"),
        ({"seed": -1}, "seed must be an integer"),
        ({"d_embed": V - 1}, "vocab_size"),
        ({"rank": (2, 3)}, "n_seeds"),
        ({"parameterization": "merged", "rank": 4}, "factorized"),
        ({"value_init": "orthogonal"}, r"value_init must be one of \['gaussian', 'identity'\], got 'orthogonal'"),
        ({"parameterization": "merged", "value_init": "identity"}, "value_init='identity' sets the factorized W_V"),
        ({"init_scale": 0.0}, "init_scale must be a finite positive number, got 0.0"),
    ],
)
def test_bad_config_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OneLayerConfig(V, **{"d_embed": D, **kwargs})


def test_options_are_the_literal_values():
    assert PARAMETERIZATIONS == ("factorized", "merged") and ATTENTIONS == ("linear", "softmax")


def test_bad_indices_raise():
    model = OneLayer(OneLayerConfig(V, D, n_seeds=2))
    with pytest.raises(ValueError, match=r"member index i must be an integer in \[0, 1\], got 2"):
        member(model, 2)
    with pytest.raises(ValueError, match=rf"query_id must be an integer in \[0, {V - 1}\], got {V}"):
        model.effective_ov(V)
    with pytest.raises(ValueError, match="n_seeds must be a positive integer, got 0"):
        per_seed_batches(lambda n, g: (torch.zeros(n, 2), torch.zeros(n)), 0)


def test_bad_tokens_raise():
    model = OneLayer(OneLayerConfig(V, D))
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.tensor([[0, V]]))
    with pytest.raises(ValueError, match="shape"):
        model(torch.zeros(2, 3, 4, dtype=torch.long))


def test_task_helpers_on_the_symbolic_task():
    from lib.ocr.symbolic import build_symbolic
    from lib.ocr.training import ov_blocks, subject_order, train_on_task

    task = build_symbolic()
    order, train_columns = subject_order(task)
    assert sorted(order.tolist()) == list(range(len(task.subject_ids)))
    assert set(order[train_columns].tolist()) == set(task.train_subjects.tolist())
    fact_index = (task.fact_of[order][:, None] == task.fact_value_ids[None, :]).float().argmax(1)
    assert (fact_index.diff() >= 0).all(), "columns grouped by fact value"
    blocks = ov_blocks(torch.randn(128, 128), task, order)
    assert (
        blocks["implications"].shape
        == blocks["facts"].shape
        == (len(task.implication_value_ids), len(task.subject_ids))
    )
    torch.testing.assert_close(blocks["facts"].mean(0), torch.zeros(len(task.subject_ids)), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="vocab_size"):
        train_on_task(task, OneLayerConfig(task.vocab_size - 1))
    with pytest.raises(ValueError, match="eval_every must be a positive integer, got 0"):
        train_on_task(task, OneLayerConfig(task.vocab_size), eval_every=0)


def test_candidate_accuracy_rejects_answers_outside_the_candidates():
    with pytest.raises(ValueError, match="candidates"):
        candidate_accuracy(torch.zeros(1, 4), torch.tensor([0]), torch.tensor([2, 3]))


# --- merged_forward_reference and column_push -----------------------------------------------------


def test_merged_forward_reference_matches_the_batched_model():
    from lib.ocr.onelayer import OneLayer, OneLayerConfig, merged_forward_reference

    model = OneLayer(OneLayerConfig(12, d_embed=12, parameterization="merged", n_seeds=2, init_scale=0.5))
    tokens = torch.randint(0, 12, (5, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(tokens)
        for s in range(2):
            assert torch.allclose(
                merged_forward_reference(model.W_OV[s], model.W_KQ[s], tokens), expected[s], atol=1e-5
            )


def test_column_push_merged_is_the_negative_gradient_and_factorized_goes_through_W_O():
    from lib.ocr.onelayer import column_push, merged_forward_reference

    g = torch.Generator().manual_seed(1)
    d, r = 10, 4
    W_O, W_V, W_KQ = (torch.randn(*shape, generator=g, dtype=torch.float64) for shape in ((d, r), (d, r), (d, d)))
    tokens = torch.randint(0, d, (6, 5), generator=g)
    answers = torch.randint(0, d, (6,), generator=g)
    rows = torch.tensor([7, 2, 9])
    # merged: a small step along the push changes the loss like -|push|^2 (first order)
    W_OV = (W_O @ W_V.T).requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(merged_forward_reference(W_OV, W_KQ, tokens), answers)
    (grad,) = torch.autograd.grad(loss, W_OV)
    push = column_push({"W_OV": W_OV.detach(), "W_KQ": W_KQ}, tokens, answers, 3, rows)
    assert torch.allclose(push, -grad[rows, 3])
    # factorized: a small step eps on W_V[3] moves W_OV[rows, 3] by eps times the push
    fpush = column_push({"W_O": W_O, "W_V": W_V, "W_KQ": W_KQ}, tokens, answers, 3, rows)
    Wv = W_V.clone().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(merged_forward_reference(W_O @ Wv.T, W_KQ, tokens), answers)
    (gv,) = torch.autograd.grad(loss, Wv)
    eps = 1e-3
    moved = W_O @ (W_V - eps * gv * (torch.arange(d) == 3)[:, None]).T  # W_OV is linear in W_V: exact up to rounding
    assert torch.allclose((moved - W_O @ W_V.T)[rows, 3] / eps, fpush, atol=1e-8)
    with pytest.raises(ValueError, match="params must have keys"):
        column_push({"W_OV": W_OV}, tokens, answers, 3, rows)


def test_candidate_loss_is_log_k_for_even_scores_and_ignores_other_tokens():
    logits = torch.tensor([[9.0, 0.0, 0.0, 0.0], [-9.0, 2.0, 2.0, 2.0]])
    assert abs(candidate_loss(logits, torch.tensor([1, 3]), torch.tensor([1, 2, 3])) - math.log(3)) < 1e-6
    sure = torch.tensor([[0.0, 50.0, 0.0]])
    assert candidate_loss(sure, torch.tensor([1]), torch.tensor([2, 1])) < 1e-6
    with pytest.raises(ValueError, match="every answer must be one of the candidates"):
        candidate_loss(torch.zeros(1, 4), torch.tensor([0]), torch.tensor([2, 3]))
