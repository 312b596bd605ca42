"""Unit tests of lib.ocr's sentence form of the OCR task: sentences, questions, names, no leakage."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib.ocr.relations import PAIRS
from lib.ocr.sentences import SentenceConfig, build_sentences
from lib.ocr.split import fictitious_names
from lib.ocr.symbolic import SymbolicConfig, build_symbolic


def test_sentences_and_questions():
    t = build_sentences()
    i = t.test_subjects[0]
    assert all(t.names[i] in s and t.fact_of[i] in s for s in t.fact_sentences(i))
    assert all(t.implication_of[i] in s for s in t.implication_sentences(i))
    qs = t.questions("test")
    assert len(qs) == len(t.test_subjects) * 2 and all(not q.prompt.endswith(" ") for q in qs)
    assert len(t.train_sentences()) == 200 * 3 + len(t.train_subjects) * 3
    assert t.candidates(0) == t.candidates(1) and len(t.candidates(2)) == 8


def test_names_are_fictitious_distinct_and_seeded():
    names = fictitious_names(500, seed=4)
    assert len(set(names)) == 500 and names == fictitious_names(500, seed=4) and names != fictitious_names(500, seed=5)
    reserved = {w.lower() for p in PAIRS for pair in p.implication_map for w in pair}
    assert not any(w.lower() in reserved for n in names for w in n.split())


# --- determinism ---------------------------------------------------------------------------------


def test_sentences_deterministic_and_seed_dependent():
    a, b, c = build_sentences(), build_sentences(), build_sentences(SentenceConfig(seed=1))
    assert a == b and a.train_sentences() == b.train_sentences()
    assert a.names != c.names and a.train_subjects != c.train_subjects


def test_default_split_counts():
    t = build_sentences()
    assert len(t.names) == 200 and [t.pair_of.count(p) for p in range(5)] == [40] * 5
    assert all(len(values) == 8 for values in t.values)
    assert len(t.train_subjects) == 40 and sorted(t.train_subjects + t.test_subjects) == list(range(200))
    for p, values in enumerate(t.values):  # five subjects per fact value, one of which trains
        for b in values:
            mine = [i for i in range(200) if t.pair_of[i] == p and t.fact_of[i] == b]
            assert len(mine) == 5 and len(set(mine) & set(t.train_subjects)) == 1


@pytest.mark.parametrize("seed", [0, 3])
def test_both_renderings_are_one_task(seed):
    s = build_symbolic(SymbolicConfig(n_subjects=200, n_facts=40, five_pairs=True, seed=seed))
    t = build_sentences(SentenceConfig(n_subjects=200, values_per_pair=8, train_fraction=0.2, seed=seed))
    assert s.tokens[:200] == t.names and s.train_subjects.tolist() == t.train_subjects
    assert [s.tokens[i].removesuffix(" (cf)") for i in s.fact_of.tolist()] == t.fact_of
    assert [s.tokens[i].removesuffix(" (cf)") for i in s.implication_of.tolist()] == t.implication_of


# --- no leakage, property-based over seeds and configs -------------------------------------------


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


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: SentenceConfig(n_subjects=4), "fewer subjects"),
        (lambda: build_sentences(SentenceConfig(train_fraction=0.05)), "no training subject"),
        (lambda: build_sentences(SentenceConfig(train_fraction=0.95)), "no test subject"),
        (
            lambda: SentenceConfig(
                n_subjects=3, pairs=PAIRS[:1], values_per_pair=1, names=("Ana Bo", "Ana Bo", "Cy Do")
            ),
            "duplicate subject names",
        ),
        (lambda: SentenceConfig(n_subjects=2, pairs=PAIRS[:1], names=("Ana Bo",)), "names"),
        (
            lambda: build_sentences(SentenceConfig(n_subjects=20, values_per_pair=1, pairs=(PAIRS[0], PAIRS[0]))),
            "duplicate relation pair names",
        ),
        (lambda: build_sentences(SentenceConfig(values_per_pair=13)), "unused fact values"),
        (lambda: build_sentences().questions("validation"), "group must be one of"),
        (lambda: build_sentences().fact_sentences(200), "subject"),
        (lambda: build_sentences().candidates(5), "pair"),
        (lambda: fictitious_names(-1), "non-negative"),
    ],
)
def test_bad_input_raises_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()
