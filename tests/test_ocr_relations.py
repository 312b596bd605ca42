"""Unit tests of lib.ocr's relation pairs: the paper's five, the counterfactual languages, RelationPair's checks."""

import pytest

from lib.ocr import (
    CITY_LANGUAGE,
    CITY_LANGUAGE_COUNTERFACTUAL,
    LINKS,
    PAIRS,
    RelationPair,
    build_sentences,
    minimal_pair,
)


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
    assert [p.causal for p in PAIRS] == [True, False, False, False, False]
    assert all(p.link_reason.strip() and "\n" not in p.link_reason for p in PAIRS)
    assert minimal_pair(3).link == "arbitrary" and not minimal_pair(3).causal and minimal_pair(3).link_reason


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
