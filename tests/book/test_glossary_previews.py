"""_ext/glossary_previews.py: a glossary link's title is the start of its term's definition, math as plain text."""

from bookfiles import load_extension
from docutils import nodes

previews = load_extension("glossary_previews")


def entry(terms: list[str], *definition: nodes.Node) -> nodes.definition_list_item:
    item = nodes.definition_list_item()
    for t in terms:
        item += nodes.term(t, t, ids=[f"term-{t.replace(' ', '-')}"])
    item += nodes.definition("", nodes.paragraph("", "", *definition))
    return item


def test_every_term_of_an_entry_gets_its_definition_with_plain_math():
    glossary = nodes.definition_list()
    glossary += entry(["fact", "implication"], nodes.Text("A rule "), nodes.math("", r"r_1 \Rightarrow r_2"))
    glossary += entry(["ICL score"], nodes.Text("Late minus   early\n loss."))
    found = previews.definitions(glossary)
    assert found == {
        "term-fact": "A rule r_1 ⇒ r_2",
        "term-implication": "A rule r_1 ⇒ r_2",
        "term-ICL-score": "Late minus early loss.",
    }
    assert previews.plain_math(r"W_{OV} = W_O W_V^\top") == "W_OV = W_O W_Vᵀ"


def test_a_long_definition_is_cut_at_a_word():
    text = "word " * 100
    cut = previews.preview(text, limit=30)
    assert len(cut) <= 30 and cut.endswith("word…")
    assert previews.preview("short  text") == "short text"


def test_only_links_into_the_glossary_are_terms():
    assert previews.term_anchor("glossary.html#term-ICL-score") == "term-ICL-score"
    assert previews.term_anchor("../chapters/glossary.html#term-fact") == "term-fact"
    assert previews.term_anchor("#term-fact") == "term-fact"
    assert previews.term_anchor("05_induction_heads.html#term-fact") is None
    assert previews.term_anchor("glossary.html") is None
