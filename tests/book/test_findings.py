"""The book's prose does not contradict what its chapters assert (issue 38).

A finding is a claim a chapter asserts in code. Each one here names the assert that carries it (a pattern the
chapter's code cells must still contain, so the finding cannot outlive its evidence) and the sentences that would
contradict it (patterns no prose may contain: every page in the book's table of contents, markdown pages whole and
notebooks' markdown cells). Each contradiction pattern is tried on an example of the sentence it is there to
catch, so none of them is vacuous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from bookfiles import CHAPTERS, code_cells, load, resolve, source, toc_files


@dataclass(frozen=True)
class Finding:
    """One asserted result and the prose that would contradict it."""

    claim: str
    chapter: str  # notebook stem in chapters/
    asserted: str  # regex found in the chapter's code cells
    contradictions: tuple[str, ...]  # regexes no prose may match (case-insensitive, across line breaks)
    example: str  # a sentence the contradictions must catch


FINDINGS = (
    Finding(
        "The minimum-nuclear-norm solution is not low rank: with fewer training than held-out subjects per fact "
        "value it has rank 2n - 1; the trained map's few directions come from the small start.",
        "03_why_factorization_generalizes",
        r"rank n when m_train >= m_test, else 2n - 1",
        (
            r"nuclear norm,?\s+i\.\s?e\.,?\s+(?:a\s+)?low rank",
            r"(?:small|low|minimum)[- ]nuclear[- ]norm[^.]{0,60}"
            r"\b(?:is|means|wants|gives|favou?rs)\b[^.]{0,20}low[- ]rank",
            r"nuclear norm[^.]{0,40}\bwants few",
        ),
        "Gradient descent is drawn towards small nuclear norm, i.e. low rank, which fills in the missing implications.",
    ),
    Finding(
        "With AdamW the factorized map leans towards the minimum-nuclear-norm solution only loosely (cosine below "
        "0.8 on every seed).",
        "03_why_factorization_generalizes",
        r'f_rows\["nuclear"\]\.max\(\) < 0\.8',
        (
            r"(?:adamw?|chapter 2's)[^.]{0,80}\b(?:converges?|reaches|finds|lands on)\b[^.]{0,30}"
            r"minimum[- ]nuclear[- ]norm solution",
        ),
        "Trained with AdamW, the factorized model converges to the minimum-nuclear-norm solution.",
    ),
    Finding(
        "With AdamW the merged map is close to neither solution (cosine below 0.5 on every seed).",
        "03_why_factorization_generalizes",
        r'max\(v\.max\(\) for v in paper_rows\["merged"\]\.values\(\)\) < 0\.5',
        (
            r"(?:adamw?|chapter 2's)[^.]{0,80}\b(?:converges?|reaches|finds|lands on)\b[^.]{0,30}"
            r"minimum[- ]frobenius[- ]norm solution",
        ),
        "The AdamW-trained merged model converges to the minimum-Frobenius-norm solution.",
    ),
    Finding(
        "A smear weight sigma below 0.5 does not mark an induction head: smeared one-layer heads that miss the "
        "induction criteria end at the same sigma.",
        "06_smeared_keys",
        r"assert missed and all\(s < 0\.5 for _, _, s, _ in missed\)",
        (r"(?:σ|sigma|\\sigma)[^.]{0,12}(?:<|below)\s*0\.5[^.]{0,30}\b(?:marks?|identif(?:y|ies)|singles? out)\b",),
        "A head whose sigma < 0.5 marks the induction heads.",
    ),
    Finding(
        "On the mixed task the non-repeat ICL does not tell the two mechanisms apart: under resample ablation the "
        "induction-like pair removes more of it than the average other pair, under zero and mean ablation less than "
        "every other pair.",
        "07_ablation",
        r'assert top\["non-repeated"\] > others\["non-repeated"\]\.mean\(\)',
        (r"non-repeat(?:ed)? ICL (?:alone |then |also )?tells (?:the two|them)[^.]{0,20}apart",),
        "The non-repeat ICL tells the two mechanisms apart.",
    ),
    Finding(
        "Cutting layer 0 from layer 1's keys on the mixed task removes nearly all the repeat ICL and makes the rest "
        "stronger: it does not leave the ICL untouched.",
        "07_ablation",
        r'assert -0\.3 < all_cut\["non-repeated"\] < -0\.05',
        (r"key cut[^.]{0,60}\bremoves none\b", r"\bremoves[^.]{0,60}\bnone of the (?:non-repeat|rest)"),
        "The key cut removes none of the non-repeat ICL.",
    ),
    Finding(
        "On natural text the two-layer model's key cut removes more than 90% of the ICL score, more than the "
        "query cut.",
        "08_natural_text",
        r'assert CUT_SHARE\["keys cut"\]\[0\] > 0\.9',
        (r"key[- ]cut[^.]{0,60}\bweakens\b", r"\bweakens the (?:model's )?ICL score"),
        "The two-layer model's key cut weakens the ICL score.",
    ),
    Finding(
        "The smeared model's induction head is compared with the other heads one at a time (a control matched in "
        "size); removing all seven others together breaks the model.",
        "08_natural_text",
        r"assert max\(high for _, _, high in single\) < 0\.1",
        (r"(?:removing|removes?) all (?:seven|7) other heads together[^.]{0,40}\bdeepens\b",),
        "Removing all seven other heads together deepens it.",
    ),
)


def code(stem: str) -> str:
    """Every code cell of chapter ``stem``, joined."""
    return "\n".join(source(c) for c in code_cells(load(CHAPTERS / f"{stem}.ipynb")))


def prose() -> dict[str, str]:
    """The prose of every page in the table of contents, by toc entry: a markdown page whole, a notebook's markdown
    cells joined."""
    texts = {}
    for entry in toc_files():
        path = resolve(entry)
        if path.suffix == ".md":
            texts[entry] = path.read_text()
        else:
            texts[entry] = "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    return texts


def flat(text: str) -> str:
    """``text`` without emphasis and code marks, line breaks and runs of spaces as one space (a sentence may wrap
    anywhere)."""
    return re.sub(r"\s+", " ", re.sub(r"[*`]", "", text))


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f.claim[:40])
def test_finding_is_still_asserted(finding):
    assert re.search(finding.asserted, code(finding.chapter)), (
        f"{finding.chapter} no longer asserts {finding.asserted!r}: update the finding with the chapter"
    )


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f.claim[:40])
def test_contradictions_catch_their_example(finding):
    assert any(re.search(p, finding.example, re.I) for p in finding.contradictions), finding.example


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f.claim[:40])
def test_no_prose_contradicts_the_finding(finding):
    found = [
        (name, match.group(0))
        for name, text in prose().items()
        for pattern in finding.contradictions
        for match in re.finditer(pattern, flat(text), re.I)
    ]
    assert not found, f"contradicts '{finding.claim}': {found}"
