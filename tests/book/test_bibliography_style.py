"""_ext/bibliography_style.py: the References page's labels read like the chapters' citations, titles as written."""

from bookfiles import load_extension
from pybtex.database import parse_string

BIB = """
@misc{a, title = {Generalization or Hallucination? Understanding OCR}, author = {Huang, Y. and Zhu, H. and Mei, S.},
       year = {2025}}
@inproceedings{b, title = {Gradient Descent Maximizes the Margin}, author = {Lyu, Kaifeng and Li, Jian}, year = {2020},
       booktitle = {ICLR}}
@misc{c, title = {Notes}, author = {{Paper Notes}}, year = {2025}}
"""


def test_labels_are_author_year_and_titles_keep_their_case():
    style = load_extension("bibliography_style").BookStyle()
    entries = parse_string(BIB, "bibtex").entries
    formatted = {e.key: e for e in style.format_entries(entries.values())}
    assert formatted["a"].label == "Huang et al., 2025"
    assert formatted["b"].label == "Lyu and Li, 2020"
    assert formatted["c"].label == "Paper Notes, 2025"
    assert "Generalization or Hallucination? Understanding OCR" in formatted["a"].text.render_as("text")
