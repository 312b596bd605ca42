"""Unit tests of lib.ocr: the symbolic and sentence forms of the OCR task."""

import pytest
import torch

from lib.ocr import PAIRS, SymbolicConfig, SymbolicTask, build_symbolic

FIVE = SymbolicConfig(five_pairs=True)


@pytest.fixture(scope="module")
def minimal() -> SymbolicTask:
    return build_symbolic()


@pytest.fixture(scope="module")
def five() -> SymbolicTask:
    return build_symbolic(FIVE)


# --- symbolic form: the contract -----------------------------------------------------------------


def test_minimal_counts_match_the_paper(minimal):
    t = minimal
    assert t.vocab_size == len(t.tokens) == 80 + 2 + 20 + 20 + 5 + 1
    assert len(t.train_subjects) == 20 and len(t.test_subjects) == 60
    assert len(t.fact_value_ids) == len(t.implication_value_ids) == 20
    assert t.pair_names == ["r1 -> r2"] and (t.pair_of == 0).all()
    # each fact value has 4 subjects, exactly one of which trains
    assert torch.bincount(t.fact_of - t.fact_value_ids[0]).tolist() == [4] * 20
    assert sorted(t.fact_of[t.train_subjects].tolist()) == t.fact_value_ids.tolist()
    assert t.tokens[t.eos_id] == "<EOS>" and t.eos_id == t.vocab_size - 1


def test_implication_is_a_function_of_the_fact(minimal, five):
    for t in (minimal, five):
        b_to_c = dict(zip(t.fact_value_ids.tolist(), t.implication_value_ids.tolist()))
        assert [b_to_c[b] for b in t.fact_of.tolist()] == t.implication_of.tolist()


def test_five_pairs_split(five):
    t = five
    assert len(t.pair_names) == 5 and torch.bincount(t.pair_of).tolist() == [16] * 5
    assert len(t.train_subjects) == 20 and len(t.test_subjects) == 60
    assert len(set(t.fact_relation_of.tolist()) | set(t.implication_relation_of.tolist())) == 10
    for p in range(5):  # each pair has its own r1 and r2
        mine = t.pair_of == p
        assert t.fact_relation_of[mine].unique().numel() == 1 and t.implication_relation_of[mine].unique().numel() == 1


@pytest.mark.parametrize("group", SymbolicTask.GROUPS)
def test_sample_layout(minimal, group):
    g = torch.Generator().manual_seed(1)
    x, y = minimal.sample(group, 50, g)
    assert x.shape == (50, 16) and y.shape == (50,) and x.dtype == y.dtype == torch.long
    assert (x[:, -1] == minimal.eos_id).all()
    subjects = x[:, :-2]
    is_subject = subjects < 80
    assert (is_subject.sum(1) == 1).all(), "exactly one subject among the first seq_len - 2 positions"
    assert torch.isin(subjects[~is_subject], minimal.noise_ids).all()
    s = subjects[is_subject]
    assert torch.isin(s, minimal.subjects_of(group)).all()
    fact = group.endswith("facts")
    assert torch.equal(x[:, -2], (minimal.fact_relation_of if fact else minimal.implication_relation_of)[s])
    assert torch.equal(y, (minimal.fact_of if fact else minimal.implication_of)[s])


def test_train_batch_thirds_and_fixed(minimal):
    x, y = minimal.train_batch(62, torch.Generator().manual_seed(0))
    assert x.shape == (62, 16)
    assert (torch.isin(y, minimal.implication_value_ids)).sum() == 62 // 3 + (62 % 3 > 1)
    xf, yf = minimal.fixed("test_implications", per_subject=3, seed=5)
    assert xf.shape == (180, 16)
    s = xf[:, :-2][xf[:, :-2] < 80]
    assert torch.equal(s, minimal.test_subjects.repeat_interleave(3))
    x2, y2 = minimal.fixed("test_implications", per_subject=3, seed=5)
    assert torch.equal(xf, x2) and torch.equal(yf, y2)


def test_same_seed_same_task_other_seed_differs():
    a, b, c = build_symbolic(), build_symbolic(), build_symbolic(SymbolicConfig(seed=1))
    assert a.tokens == b.tokens and torch.equal(a.fact_of, b.fact_of) and torch.equal(a.train_subjects, b.train_subjects)
    assert a.tokens[:80] != c.tokens[:80]
    assert not torch.equal(a.train_subjects, c.train_subjects)


@pytest.mark.parametrize("kwargs", [
    dict(seq_len=2), dict(n_noise=0), dict(n_subjects=0), dict(train_per_fact=0), dict(five_pairs=True, n_facts=21),
    dict(train_per_fact=4), dict(n_subjects=39), dict(five_pairs=True, n_subjects=4, n_facts=5), dict(seed=-1),
    dict(five_pairs=True, n_facts=65, n_subjects=400),
])
def test_bad_symbolic_config(kwargs):
    with pytest.raises(ValueError):
        build_symbolic(SymbolicConfig(**kwargs))


def test_bad_group_and_sizes(minimal):
    g = torch.Generator()
    with pytest.raises(ValueError, match="unknown group"):
        minimal.sample("facts", 3, g)
    with pytest.raises(ValueError):
        minimal.sample("test_facts", 0, g)
    with pytest.raises(ValueError):
        minimal.train_batch(2, g)
    with pytest.raises(ValueError):
        minimal.fixed("test_facts", per_subject=0)


def test_pairs_are_the_papers_five():
    assert [p.name.split(" (")[0] for p in PAIRS] == ["city -> language"] * 2 + ["country -> calling code", "profession -> colour", "sport -> music"]
