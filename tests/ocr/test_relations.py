"""Unit tests of lib.ocr's relation pairs: the paper's five, the counterfactual languages, RelationPair's checks."""

import pytest

from lib.ocr.relations import (
    CITY_LANGUAGE,
    CITY_LANGUAGE_COUNTERFACTUAL,
    LINKS,
    PAIRS,
    RelationPair,
    minimal_pair,
    shifted_map,
)
from lib.ocr.sentences import build_sentences, pair_sentences


def test_pairs_are_the_papers_five():
    assert [p.name.split(" (")[0] for p in PAIRS] == ["city -> language"] * 2 + [
        "country -> calling code",
        "profession -> colour",
        "sport -> music",
    ]


def test_counterfactual_is_a_derangement_of_the_true_languages():
    true = dict(CITY_LANGUAGE)
    cf = dict(CITY_LANGUAGE_COUNTERFACTUAL)
    assert cf.keys() == true.keys() and sorted(cf.values()) == sorted(true.values())
    assert all(cf[city] != true[city] for city in true)
    assert true["Paris"] == "French" and true["Tokyo"] == "Japanese"


def test_every_rule_states_its_link_once():
    assert LINKS == ("causal", "counterfactual", "correlated, not causal", "arbitrary")
    links = {p.name: p.link for p in PAIRS}
    assert links == {
        "city -> language": "causal",
        "city -> language (counterfactual)": "counterfactual",
        "country -> calling code": "correlated, not causal",
        "profession -> colour": "arbitrary",
        "sport -> music": "arbitrary",
    }
    assert [p.link == "causal" for p in PAIRS] == [True, False, False, False, False]
    assert all(p.link_reason.strip() and "\n" not in p.link_reason for p in PAIRS)
    assert minimal_pair(3).link == "arbitrary" and minimal_pair(3).link_reason


def test_counterfactual_pair_is_the_shifted_table():
    cf = next(p for p in PAIRS if p.link == "counterfactual")
    assert cf.implication_map == CITY_LANGUAGE_COUNTERFACTUAL
    assert cf.fact_relation == PAIRS[0].fact_relation and cf.implication_relation == PAIRS[0].implication_relation


def test_true_and_counterfactual_pairs_use_different_cities():
    t = build_sentences()
    assert not set(t.values[0]) & set(t.values[1])


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: RelationPair("x", "r1", "r2", (("a", "c1"), ("a", "c2"))), "not a function"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c1"), ("a", "c1"))), "duplicate fact value"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c1"), ("b", "c1"))), "duplicate implication values"),
        (lambda: RelationPair("x", "r1", "r2", ()), "empty"),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c"),), fact_templates=("{s} likes it.",)), "lacks"),
        (
            lambda: RelationPair("x", "r1", "r2", (("a", "c"),), link="true"),  # type: ignore[arg-type]
            r"link must be one of \['causal', 'counterfactual', 'correlated, not causal', 'arbitrary'\], got 'true'",
        ),
        (lambda: RelationPair("x", "r1", "r2", (("a", "c"),), link_reason="a\nb"), "link_reason must be one line"),
    ],
)
def test_bad_relation_pair(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_shifted_map_moves_every_value_by_the_shift():
    small = (("a", "x"), ("b", "y"), ("c", "z"))
    assert shifted_map(small, 1) == (("a", "y"), ("b", "z"), ("c", "x"))
    assert shifted_map(small, -1) == shifted_map(small, 2) == (("a", "z"), ("b", "x"), ("c", "y"))
    assert shifted_map(small, 3) == small
    # any shift that is not a multiple of the length is a derangement of distinct values
    for shift in range(1, len(CITY_LANGUAGE)):
        assert not set(shifted_map(CITY_LANGUAGE, shift)) & set(CITY_LANGUAGE)


@pytest.mark.parametrize(
    "mapping, shift, match",
    [((), 1, "mapping must hold at least one"), ((("a", "x"),), 1.5, "shift must be an int, got 1.5")],
)
def test_shifted_map_rejects_bad_input(mapping, shift, match):
    with pytest.raises(ValueError, match=match):
        shifted_map(mapping, shift)


def test_pair_sentences_are_the_tasks():
    t = build_sentences()
    for i in range(0, len(t.names), 7):
        facts, implications = pair_sentences(t.pairs[t.pair_of[i]], t.names[i], t.fact_of[i])
        assert facts == t.fact_sentences(i) and implications == t.implication_sentences(i)
    facts, implications = pair_sentences(minimal_pair(2), "s0", "b1")
    assert (facts, implications) == (["s0 r1 b1."], ["s0 r2 c1."])
    with pytest.raises(ValueError, match="fact_value must be one of"):
        pair_sentences(PAIRS[0], "Ana", "Atlantis")
