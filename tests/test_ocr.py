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
    assert (
        a.tokens == b.tokens and torch.equal(a.fact_of, b.fact_of) and torch.equal(a.train_subjects, b.train_subjects)
    )
    assert a.tokens[:80] != c.tokens[:80]
    assert not torch.equal(a.train_subjects, c.train_subjects)


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
    ],
)
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
    assert [p.name.split(" (")[0] for p in PAIRS] == ["city -> language"] * 2 + [
        "country -> calling code",
        "profession -> colour",
        "sport -> music",
    ]


# --- no leakage, property-based over seeds and configs -------------------------------------------

import re  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lib.ocr import (  # noqa: E402
    CITY_LANGUAGE,
    CITY_LANGUAGE_COUNTERFACTUAL,
    RelationPair,
    SentenceConfig,
    answer_index,
    assign_groups,
    build_sentences,
    fictitious_names,
    mean_rank,
    split_subjects,
)


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
    subject = x[:, :-2][x[:, :-2] < config.n_subjects]
    implication_rows = torch.isin(x[:, -2], t.implication_relation_of)
    assert not torch.isin(subject[implication_rows], t.test_subjects).any(), "a test implication leaked into training"
    assert (
        torch.isin(y[implication_rows], t.implication_value_ids).all()
        and torch.isin(y[~implication_rows], t.fact_value_ids).all()
    )
    # test facts are trained on: the test subjects' fact rows are in the training mix
    assert torch.isin(subject[~implication_rows], t.test_subjects).any()


@st.composite
def sentence_configs(draw):
    n_pairs = draw(st.integers(1, 5))
    values = draw(st.integers(1, 6))
    per_value = draw(st.integers(2, 7))
    frac = draw(st.floats(0.5 / per_value + 1e-6, 1 - 0.5 / per_value - 1e-6))
    return SentenceConfig(
        n_subjects=n_pairs * values * per_value,
        values_per_pair=values,
        train_fraction=frac,
        pairs=PAIRS[:n_pairs],
        seed=draw(st.integers(0, 2**31)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sentence_configs())
def test_sentences_no_leakage(config):
    t = build_sentences(config)
    text = t.train_sentences()
    assert set(t.train_subjects).isdisjoint(t.test_subjects)
    for i in t.test_subjects:
        name = re.compile(rf"\b{re.escape(t.names[i])}\b")
        mentions = [s for s in text if name.search(s)]
        assert sorted(mentions) == sorted(t.fact_sentences(i)), (
            "a test subject appears in training other than by its facts"
        )
    for q in t.questions("test"):
        assert q.candidates[q.answer] == t.implication_of[q.subject]
    # the rule is learnable: every test subject's fact value has a training subject with the same value
    trained = {(t.pair_of[i], t.fact_of[i]) for i in t.train_subjects}
    assert all((t.pair_of[i], t.fact_of[i]) in trained for i in t.test_subjects)


# --- determinism ---------------------------------------------------------------------------------


def test_sentences_deterministic_and_seed_dependent():
    a, b, c = build_sentences(), build_sentences(), build_sentences(SentenceConfig(seed=1))
    assert a == b and a.train_sentences() == b.train_sentences()
    assert a.names != c.names and a.train_subjects != c.train_subjects


def test_sampling_is_reproducible_from_the_generator(minimal):
    draws = [minimal.train_batch(30, torch.Generator().manual_seed(7)) for _ in range(2)]
    assert torch.equal(draws[0][0], draws[1][0]) and torch.equal(draws[0][1], draws[1][1])
    other = minimal.train_batch(30, torch.Generator().manual_seed(8))
    assert not torch.equal(draws[0][0], other[0])


def test_both_renderings_are_one_task():
    s = build_symbolic(SymbolicConfig(n_subjects=200, n_facts=40, five_pairs=True, seed=3))
    t = build_sentences(SentenceConfig(n_subjects=200, values_per_pair=8, train_fraction=0.2, seed=3))
    assert s.tokens[:200] == t.names and s.train_subjects.tolist() == t.train_subjects
    assert [s.tokens[i].removesuffix(" (cf)") for i in s.implication_of.tolist()] == t.implication_of


def test_names_are_fictitious_distinct_and_seeded():
    names = fictitious_names(500, seed=4)
    assert len(set(names)) == 500 and names == fictitious_names(500, seed=4) and names != fictitious_names(500, seed=5)
    reserved = {w.lower() for p in PAIRS for pair in p.implication_map for w in pair}
    assert not any(w.lower() in reserved for n in names for w in n.split())


# --- the relation pairs --------------------------------------------------------------------------


def test_counterfactual_is_a_derangement_of_the_true_languages():
    true = dict(CITY_LANGUAGE)
    cf = dict(CITY_LANGUAGE_COUNTERFACTUAL)
    assert cf.keys() == true.keys() and sorted(cf.values()) == sorted(true.values())
    assert all(cf[city] != true[city] for city in true)
    assert true["Paris"] == "French" and true["Tokyo"] == "Japanese"


def test_true_and_counterfactual_pairs_use_different_cities():
    t = build_sentences()
    assert not set(t.values[0]) & set(t.values[1])


def test_sentences_and_questions():
    t = build_sentences()
    i = t.test_subjects[0]
    assert all(t.names[i] in s and t.fact_of[i] in s for s in t.fact_sentences(i))
    assert all(t.implication_of[i] in s for s in t.implication_sentences(i))
    qs = t.questions("test")
    assert len(qs) == len(t.test_subjects) * 2 and all(not q.prompt.endswith(" ") for q in qs)
    assert len(t.train_sentences()) == 200 * 3 + len(t.train_subjects) * 3
    assert t.candidates(0) == t.candidates(1) and len(t.candidates(2)) == 8


# --- split and metric ----------------------------------------------------------------------------


def test_split_subjects_first_of_each_group_trains():
    train, test = split_subjects([0, 1, 0, 1, 0, 1, 0, 1, 0, 1], 0.2)
    assert train == [0, 1] and test == [2, 3, 4, 5, 6, 7, 8, 9]
    assert split_subjects(["a", "a", "b", "b", "b"], 0.5) == ([0, 2, 3], [1, 4])  # 1.5 rounds up to 2


def test_assign_groups_balanced():
    subset, value = assign_groups(23, 3, 2, torch.Generator().manual_seed(0))
    assert sorted(torch.bincount(torch.tensor(subset)).tolist()) == [7, 8, 8]
    assert all(0 <= v < 2 for v in value)


def test_mean_rank():
    assert mean_rank(torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]]), torch.tensor([0, 2])) == 0.5
    assert mean_rank(torch.zeros(4, 5), [0, 1, 2, 3]) == 2.0  # all tied: chance
    assert mean_rank([[0.1, 0.9], [1.0, 2.0, 3.0]], [0, 0]) == 1.5  # ragged rows
    assert answer_index(("French", "German"), "German") == 1


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, True, "0.2"])
def test_bad_train_fraction(fraction):
    with pytest.raises(ValueError, match="train_fraction"):
        SentenceConfig(train_fraction=fraction)
    with pytest.raises(ValueError, match="train_fraction"):
        split_subjects([0, 0, 0], fraction)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: SentenceConfig(n_subjects=4), "fewer subjects"),
        (lambda: build_symbolic(SymbolicConfig(n_subjects=3, n_facts=5, five_pairs=True)), "fewer subjects"),
        (lambda: assign_groups(2, 3, 1, torch.Generator()), "fewer subjects"),
        (lambda: build_sentences(SentenceConfig(train_fraction=0.05)), "no training subject"),
        (lambda: build_sentences(SentenceConfig(train_fraction=0.95)), "no test subject"),
        (lambda: build_symbolic(SymbolicConfig(train_per_fact=4)), "no test subject"),
        (lambda: split_subjects([0], 0.5), "no t"),
        (lambda: split_subjects([], 0.5), "no subjects"),
        (
            lambda: SentenceConfig(
                n_subjects=3, pairs=PAIRS[:1], values_per_pair=1, names=("Ana Bo", "Ana Bo", "Cy Do")
            ),
            "duplicate subject names",
        ),
        (lambda: SentenceConfig(n_subjects=2, pairs=PAIRS[:1], names=("Ana Bo",)), "names"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c1"), ("a", "c2"))), "not a function"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c1"), ("a", "c1"))), "duplicate fact value"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c1"), ("b", "c1"))), "duplicate implication values"),
        (lambda: RelationPair("x", "r1", "r2", ()), "empty"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c"),), fact_templates=("{s} likes it.",)), "lacks"),
        (
            lambda: build_sentences(SentenceConfig(n_subjects=20, values_per_pair=1, pairs=(PAIRS[0], PAIRS[0]))),
            "duplicate relation pair names",
        ),
        (lambda: build_sentences(SentenceConfig(values_per_pair=13)), "unused fact values"),
        (lambda: SymbolicConfig(seq_len=2), "too short for the layout"),
        (lambda: SymbolicConfig(seq_len=4, n_noise=0), "n_noise"),
        (lambda: mean_rank(torch.zeros(0, 3), []), "empty evaluation set"),
        (lambda: mean_rank([], []), "empty evaluation set"),
        (lambda: mean_rank(torch.zeros(2, 3), [0, 3]), "not among"),
        (lambda: mean_rank(torch.zeros(2, 3), [0, -1]), "not among"),
        (lambda: mean_rank(torch.zeros(2, 3), [0]), "answers"),
        (lambda: mean_rank(torch.zeros(3), [0, 1, 2]), "2-D"),
        (lambda: mean_rank(torch.tensor([[0.0, float("nan")]]), [0]), "finite"),
        (lambda: answer_index(("French", "German"), "Dutch"), "does not contain"),
        (lambda: build_sentences().questions("validation"), "unknown group"),
        (lambda: build_sentences().fact_sentences(200), "subject"),
        (lambda: build_sentences().candidates(5), "pair"),
        (lambda: fictitious_names(-1), "non-negative"),
    ],
)
def test_bad_input_raises_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# --- exercise checks -----------------------------------------------------------------------------

from lib.checks import CheckFailed, check_mean_rank, check_split_subjects  # noqa: E402


def _stub(*args):
    raise NotImplementedError


def test_check_split_subjects():
    check_split_subjects(split_subjects)
    with pytest.raises(CheckFailed, match="not implemented"):
        check_split_subjects(_stub)

    def banker(group_of, fraction):  # Python's round() sends 1.5 to 2 but 0.5 to 0
        groups = {}
        for i, g in enumerate(group_of):
            groups.setdefault(g, []).append(i)
        train = sorted(i for m in groups.values() for i in m[: round(fraction * len(m))])
        return train, sorted(set(range(len(group_of))) - set(train))

    with pytest.raises(CheckFailed, match="differs"):
        check_split_subjects(banker)
    with pytest.raises(CheckFailed, match="differs"):
        check_split_subjects(lambda g, f: split_subjects(g, f)[::-1])


def test_check_mean_rank():
    check_mean_rank(mean_rank)
    with pytest.raises(CheckFailed, match="not implemented"):
        check_mean_rank(_stub)

    def ties_ignored(scores, answer):
        return (scores > scores.gather(1, answer[:, None])).sum(1).float().mean().item()

    with pytest.raises(CheckFailed, match="differs"):
        check_mean_rank(ties_ignored)
    with pytest.raises(CheckFailed, match="differs"):  # 1-indexed
        check_mean_rank(lambda s, a: mean_rank(s, a) + 1)


# --- figures and tables --------------------------------------------------------------------------

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from lib import plot  # noqa: E402
from lib.ocr import markdown_table  # noqa: E402


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


def test_kinds_and_markdown(minimal):
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
    assert markdown_table([{"a": 1, "b": "x|y"}]) == "| a | b |\n|---|---|\n| 1 | x\\|y |"
    with pytest.raises(ValueError):
        markdown_table([])
