"""Unit tests of lib.ocr's symbolic form of the OCR task: layout, sampling, the train/test split, figures."""

import matplotlib.pyplot as plt
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from lib.ocr.symbolic import SymbolicConfig, SymbolicTask, build_symbolic
from lib.show import plot

FIVE = SymbolicConfig(five_pairs=True)


@pytest.fixture(scope="module")
def minimal() -> SymbolicTask:
    return build_symbolic()


@pytest.fixture(scope="module")
def five() -> SymbolicTask:
    return build_symbolic(FIVE)


# --- the contract --------------------------------------------------------------------------------


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


# --- the relation token's position: "fixed" (book) or "random" (the official generator) ---------------


def _parts(task: SymbolicTask, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Subject position, relation position, subject id and relation id of every row (exactly one each)."""
    is_subject = x < len(task.subject_ids)
    is_relation = torch.isin(x, task.relation_ids)
    assert (is_subject.sum(1) == 1).all() and (is_relation.sum(1) == 1).all()
    where_s, where_r = is_subject.float().argmax(1), is_relation.float().argmax(1)
    rows = torch.arange(len(x))
    return where_s, where_r, x[rows, where_s], x[rows, where_r]


@pytest.mark.parametrize("position", ["fixed", "random"])
@pytest.mark.parametrize("five_pairs", [False, True])
@pytest.mark.parametrize("group", SymbolicTask.GROUPS)
def test_layout_of_both_relation_positions(position, five_pairs, group):
    task = build_symbolic(SymbolicConfig(relation_position=position, five_pairs=five_pairs))
    x, y = task.sample(group, 400, torch.Generator().manual_seed(3))
    where_s, where_r, s, r = _parts(task, x)
    assert (x[:, -1] == task.eos_id).all() and (x[:, :-1] != task.eos_id).all()
    assert (where_s < where_r).all() and (where_r <= task.config.seq_len - 2).all(), "subject, then relation, then EOS"
    if position == "fixed":
        assert (where_r == task.config.seq_len - 2).all()
    rest = torch.ones_like(x, dtype=torch.bool)
    rest[torch.arange(len(x)), where_s] = rest[torch.arange(len(x)), where_r] = False
    rest[:, -1] = False
    assert torch.isin(x[rest], task.noise_ids).all(), "every other position is noise"
    fact = group.endswith("facts")
    assert torch.isin(s, task.subjects_of(group)).all()
    assert torch.equal(r, (task.fact_relation_of if fact else task.implication_relation_of)[s])
    assert torch.equal(y, (task.fact_of if fact else task.implication_of)[s])


@pytest.mark.parametrize("position", ["fixed", "random"])
def test_subject_position_is_uniform(position):
    task = build_symbolic(SymbolicConfig(relation_position=position))
    x, _ = task.sample("train_facts", 14_000, torch.Generator().manual_seed(0))
    where_s = _parts(task, x)[0]
    counts = torch.bincount(where_s, minlength=task.config.seq_len)
    assert counts[-2:].sum() == 0 and counts[:-2].min() > 0.85 * counts[:-2].float().mean(), counts.tolist()


def test_random_relation_position_is_uniform_after_the_subject():
    task = build_symbolic(SymbolicConfig(relation_position="random", seq_len=8))
    x, _ = task.sample("train_facts", 60_000, torch.Generator().manual_seed(0))
    where_s, where_r, _, _ = _parts(task, x)
    L = task.config.seq_len
    counts = torch.zeros(L, L)
    counts.index_put_((where_s, where_r), torch.ones(len(x)), accumulate=True)
    # subject uniform over its L - 2 positions; given the subject at p, relation uniform over p + 1 .. L - 2
    per_subject = counts.sum(1)[: L - 2]
    assert per_subject.min() > 0.9 * per_subject.mean()
    for p in range(L - 2):
        allowed = counts[p, p + 1 : L - 1]
        assert counts[p].sum() == allowed.sum(), "the relation never sits before the subject or on EOS"
        assert allowed.min() > 0.85 * allowed.mean(), f"subject at {p}: relation positions {allowed.tolist()}"


def test_fixed_layout_is_the_default_and_unchanged_by_the_option():
    assert SymbolicConfig().relation_position == "fixed"
    a = build_symbolic().train_batch(60, torch.Generator().manual_seed(4))
    b = build_symbolic(SymbolicConfig(relation_position="fixed")).train_batch(60, torch.Generator().manual_seed(4))
    c = build_symbolic(SymbolicConfig(relation_position="random")).train_batch(60, torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), "the default draws what it drew before the option"
    assert not (c[0][:, -2:-1] == a[0][:, -2:-1]).all(), "the random layout moves the relation"


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


def test_kinds_and_decode(minimal):
    assert [minimal.kind_of(i) for i in (0, 80, 82, 102, 122, 127)] == [
        "subject",
        "relation",
        "fact value",
        "implication value",
        "noise",
        "EOS",
    ]
    assert torch.equal(minimal.relation_ids, torch.tensor([80, 81]))
    with pytest.raises(ValueError):
        minimal.kind_of(128)
    with pytest.raises(ValueError):
        minimal.decode([0, 500])


# --- determinism ---------------------------------------------------------------------------------


def test_same_seed_same_task_other_seed_differs():
    a, b, c = build_symbolic(), build_symbolic(), build_symbolic(SymbolicConfig(seed=1))
    assert (
        a.tokens == b.tokens and torch.equal(a.fact_of, b.fact_of) and torch.equal(a.train_subjects, b.train_subjects)
    )
    assert a.tokens[:80] != c.tokens[:80]
    assert not torch.equal(a.train_subjects, c.train_subjects)


def test_sampling_is_reproducible_from_the_generator(minimal):
    draws = [minimal.train_batch(30, torch.Generator().manual_seed(7)) for _ in range(2)]
    assert torch.equal(draws[0][0], draws[1][0]) and torch.equal(draws[0][1], draws[1][1])
    other = minimal.train_batch(30, torch.Generator().manual_seed(8))
    assert not torch.equal(draws[0][0], other[0])


# --- no leakage, property-based over seeds and configs -------------------------------------------


@st.composite
def symbolic_configs(draw):
    five = draw(st.booleans())
    n_facts = draw(st.sampled_from([5, 10]) if five else st.integers(1, 12))
    train = draw(st.integers(1, 3))
    per_fact = train + draw(st.integers(1, 3))
    return SymbolicConfig(
        n_subjects=n_facts * per_fact + draw(st.integers(0, n_facts - 1)),
        n_facts=n_facts,
        train_per_fact=train,
        seq_len=draw(st.integers(3, 20)),
        n_noise=draw(st.integers(1, 6)),
        five_pairs=five,
        relation_position=draw(st.sampled_from(["fixed", "random"])),
        seed=draw(st.integers(0, 2**31)),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(symbolic_configs())
def test_symbolic_no_leakage(config):
    t = build_symbolic(config)
    train, test = set(t.train_subjects.tolist()), set(t.test_subjects.tolist())
    assert train.isdisjoint(test) and train | test == set(range(config.n_subjects))
    # every fact value has exactly train_per_fact training subjects and at least one test subject
    for b in t.fact_value_ids.tolist():
        mine = set((t.fact_of == b).nonzero().flatten().tolist())
        assert len(mine & train) == config.train_per_fact and mine & test
    x, y = t.train_batch(600, torch.Generator().manual_seed(config.seed % 1000))
    _, _, subject, relation = _parts(t, x)
    implication_rows = torch.isin(relation, t.implication_relation_of)
    assert not torch.isin(subject[implication_rows], t.test_subjects).any(), "a test implication leaked into training"
    assert (
        torch.isin(y[implication_rows], t.implication_value_ids).all()
        and torch.isin(y[~implication_rows], t.fact_value_ids).all()
    )
    # test facts are trained on: the test subjects' fact rows are in the training mix
    assert torch.isin(subject[~implication_rows], t.test_subjects).any()


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(seq_len=2),
        dict(n_noise=0),
        dict(n_subjects=0),
        dict(train_per_fact=0),
        dict(five_pairs=True, n_facts=21),
        dict(train_per_fact=4),
        dict(n_subjects=39),
        dict(five_pairs=True, n_subjects=4, n_facts=5),
        dict(seed=-1),
        dict(five_pairs=True, n_facts=65, n_subjects=400),
        dict(relation_position="last"),
    ],
)
def test_bad_symbolic_config(kwargs):
    with pytest.raises(ValueError):
        build_symbolic(SymbolicConfig(**kwargs))


def test_bad_group_and_sizes(minimal):
    g = torch.Generator()
    with pytest.raises(ValueError, match=r"group must be one of \[.*\], got"):
        minimal.sample("facts", 3, g)
    with pytest.raises(ValueError):
        minimal.sample("test_facts", 0, g)
    with pytest.raises(ValueError):
        minimal.train_batch(2, g)
    with pytest.raises(ValueError):
        minimal.fixed("test_facts", per_subject=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: build_symbolic(SymbolicConfig(n_subjects=3, n_facts=5, five_pairs=True)), "fewer subjects"),
        (lambda: build_symbolic(SymbolicConfig(train_per_fact=4)), "no test subject"),
        (lambda: SymbolicConfig(seq_len=2), "too short for the layout"),
        (lambda: SymbolicConfig(seq_len=4, n_noise=0), "n_noise"),
        (
            lambda: SymbolicConfig(relation_position="last"),
            r"relation_position must be one of \['fixed', 'random'\], got 'last'",
        ),
    ],
)
def test_bad_input_raises_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# --- figures -------------------------------------------------------------------------------------


def test_figures(five):
    is_train = torch.zeros(80, dtype=torch.bool)
    is_train[five.train_subjects] = True
    fig = plot.ocr_split(
        five.fact_of - five.fact_value_ids[0],
        is_train,
        [five.tokens[b] for b in five.fact_value_ids.tolist()],
        pair_of=five.pair_of,
        pair_names=five.pair_names,
    )
    assert isinstance(fig, Figure)
    x, y = five.sample("test_facts", 4, torch.Generator())
    kinds = [[five.kind_of(t) for t in row.tolist()] for row in x]
    grid = torch.tensor([[("noise", "subject", "relation", "EOS").index(k) for k in row] for row in kinds])
    assert isinstance(plot.ocr_token_layout(five.decode(x[0]), kinds[0], five.tokens[y[0]], kind_grid=grid), Figure)
    with pytest.raises(ValueError, match="kinds"):
        plot.ocr_token_layout(["a"], ["vowel"], "b")
    plt.close("all")


# --- symbolic_sequences: the layout from given draws ---------------------------------------------


@pytest.mark.parametrize("five_pairs", [False, True])
@pytest.mark.parametrize("group", ["test_implications", "train_facts", "test_facts", "train_implications"])
def test_symbolic_sequences_reproduce_fixed(five_pairs, group):
    from lib.ocr.symbolic import symbolic_sequences

    t = build_symbolic(SymbolicConfig(five_pairs=five_pairs))
    subjects = t.subjects_of(group).repeat_interleave(3)
    g = torch.Generator().manual_seed(7)  # the draws of SymbolicTask._sequences, in its order
    noise = t.noise_ids[torch.randint(0, len(t.noise_ids), (len(subjects), t.config.seq_len), generator=g)]
    where = torch.randint(0, t.config.seq_len - 2, (len(subjects),), generator=g)
    before = noise.clone()
    x, y = symbolic_sequences(t, group, subjects, noise, where)
    ex, ey = t.fixed(group, per_subject=3, seed=7)
    assert torch.equal(x, ex) and torch.equal(y, ey)
    assert torch.equal(noise, before), "the noise is left unchanged"


def test_symbolic_sequences_rejects_bad_shapes_and_positions(minimal):
    from lib.ocr.symbolic import symbolic_sequences

    noise = torch.zeros(2, 16, dtype=torch.long)
    with pytest.raises(ValueError, match="noise"):
        symbolic_sequences(minimal, "train_facts", torch.tensor([0, 1]), noise[:, :5], torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="where must lie"):
        symbolic_sequences(minimal, "train_facts", torch.tensor([0, 1]), noise, torch.tensor([0, 14]))
    with pytest.raises(ValueError, match="group"):
        symbolic_sequences(minimal, "facts", torch.tensor([0, 1]), noise, torch.tensor([0, 1]))  # type: ignore[arg-type]
