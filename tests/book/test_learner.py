"""The learner edition (`make learner`, committed in `learner/`): up to date with the chapters, no solution survives,
no MyST construct is left, no cell redefines a learner's function, and every stub pairs with its solution.

"Every stub, once replaced by its solution, passes its check" is checked in two halves: here, that
replacing each stub of the learner notebook by its solution gives back exactly the code the chapter
runs (same cells, same order, checks included); and nbval, which executes that chapter code with its
checks in `make test`. `tests/book/test_learner_run.py` runs the learner notebooks themselves.
"""

import ast
import re
import sys

import pytest
from bookfiles import ROOT, code_cells, load, notebooks, source, tags

sys.path.insert(0, str(ROOT / "scripts"))
import make_learner  # noqa: E402

import translations  # noqa: E402

NOTEBOOKS = notebooks()
IDS = [p.name for p in NOTEBOOKS]
EDITIONS = [(p, None) for p in NOTEBOOKS] + [
    (p, lang) for lang in translations.languages() for p in make_learner.translated_chapters(lang)
]
"""(chapter, language) of every learner notebook: the English edition of every chapter, ``learner/LANG/`` of every
chapter whose translation is complete."""
EDITION_IDS = [f"{lang}/{p.name}" if lang else p.name for p, lang in EDITIONS]


def learner_path(path, lang):
    return ROOT / "learner" / (lang or "") / path.name


def defined_names(code: str) -> set[str]:
    return {n.name for n in ast.parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def significant_lines(code: str) -> list[str]:
    return [
        ln.strip()
        for ln in code.splitlines()
        if ln.strip() and not ln.strip().startswith(("#", '"""', "def ", "return"))
    ]


@pytest.fixture(scope="module")
def edition():
    """The committed learner editions, by (language, file name) (``test_the_committed_edition_is_up_to_date`` ties
    them to the chapters)."""
    return {(lang, p.name): load(learner_path(p, lang)) for p, lang in EDITIONS}


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_the_committed_edition_is_up_to_date(path, lang):
    """Colab opens ``learner/`` from GitHub: it must be what ``make learner`` writes from the chapters now."""
    committed = learner_path(path, lang)
    where = committed.relative_to(ROOT)
    assert committed.exists(), f"{where} is missing: run `make learner` and commit learner/"
    assert committed.read_text() == make_learner.rendered(path, lang), (
        f"{where} is out of date with chapters/{path.name} (or its translation): run `make learner`, commit learner/"
    )


def test_no_learner_notebook_without_its_chapter():
    assert sorted(p.name for p in (ROOT / "learner").glob("*.ipynb")) == IDS
    for lang in translations.languages():
        written = sorted(p.name for p in (ROOT / "learner" / lang).glob("*.ipynb"))
        assert written == [p.name for p in make_learner.translated_chapters(lang)], f"learner/{lang}"


MYST = re.compile(
    r"\{(?:term|cite|cite:[tp]|dropdown|numref|ref|doc|eq|glue|download|admonition|note|warning)\}|^\(\w[\w-]*\)=$"
)


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_no_myst_construct_is_left(path, lang, edition):
    """Jupyter and Colab show MyST roles, directives and targets as raw text."""
    left = [
        m.group(0)
        for c in edition[lang, path.name]["cells"]
        for m in MYST.finditer(source(c))
        if c["cell_type"] == "markdown"
    ]
    assert not left, f"{learner_path(path, lang)} still has MyST: {left[:5]}"


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_no_cell_redefines_a_learner_s_function(path, lang, edition):
    """A stub's names are defined there only: no later cell may replace the learner's function with another
    definition (rebinding it through ``framework.passing_or_reference`` keeps the learner's when it passes)."""
    cells = code_cells(edition[lang, path.name])
    stubs = [defined_names(source(c)) for c in cells if "exercise-stub" in tags(c)]
    for names in stubs:
        for name in names:
            where = [i for i, c in enumerate(cells) if name in defined_names(source(c))]
            assert len(where) == 1, f"learner/{path.name}: {name} is defined in {len(where)} code cells"


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_the_first_cell_after_the_title_says_what_the_edition_is(path, lang, edition):
    notice = source(edition[lang, path.name]["cells"][1])
    words = make_learner.own_words(lang)
    assert notice.startswith((words["exercises"].split("{")[0], words["no_exercises"].split("{")[0]))
    assert f"{'/' + lang if lang else ''}/chapters/{path.stem}.html)" in notice


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_no_solution_survives(path, lang, edition):
    nb, st = load(path), edition[lang, path.name]
    assert not [c for c in st["cells"] if "solution" in tags(c)]
    edition_code = "\n".join(source(c) for c in code_cells(st))
    for cell in code_cells(nb):
        if "solution" in tags(cell):
            leaked = [
                ln
                for ln in significant_lines(source(cell))
                if ln not in ("pass",) and ln in edition_code and len(ln) > 12
            ]
            assert not leaked, f"{path.name}: solution lines left in the learner notebook: {leaked[:3]}"


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_stubs_pair_with_solutions(path, lang, edition):
    nb = load(path)
    cells = code_cells(nb)
    stubs = [i for i, c in enumerate(cells) if "exercise-stub" in tags(c)]
    solutions = [i for i, c in enumerate(cells) if "solution" in tags(c)]
    assert len(stubs) == len(solutions), f"{path.name}: {len(stubs)} stubs but {len(solutions)} solutions"
    for s, sol in zip(stubs, solutions):
        stub_code, sol_code = source(cells[s]), source(cells[sol])
        assert sol == s + 1, f"{path.name}: the solution must be the next code cell after its stub"
        assert "NotImplementedError" in stub_code, f"{path.name}: stub must raise NotImplementedError"
        assert defined_names(stub_code) == defined_names(sol_code) != set(), (
            f"{path.name}: stub and solution define different names"
        )
        check = source(cells[sol + 1])
        assert any(name in check for name in defined_names(sol_code)), (
            f"{path.name}: the cell after a solution must check it"
        )
    # Learner notebook with each stub replaced by its solution == the code the chapter runs.
    solution_of = {source(cells[s]): source(cells[sol]) for s, sol in zip(stubs, solutions)}
    solved = [solution_of.get(source(c), source(c)) for c in code_cells(edition[lang, path.name])]
    chapter = [source(c) for c in cells if "exercise-stub" not in tags(c)]
    assert solved == chapter


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_learner_notebook_is_clean(path, lang, edition):
    st = edition[lang, path.name]
    for cell in code_cells(st):
        assert not cell["outputs"] and cell["execution_count"] is None
        assert not set(tags(cell)) & make_learner.SKIP_TAGS
    for cell in st["cells"]:
        if cell["cell_type"] == "markdown":
            assert "{dropdown}" not in source(cell)
            assert "{term}" not in source(cell) and "{cite" not in source(cell), "MyST roles show raw in Jupyter"


@pytest.mark.parametrize(("path", "lang"), EDITIONS, ids=EDITION_IDS)
def test_learner_notebook_links_no_local_page(path, lang, edition):
    """The edition holds notebooks only: a link to a local .md/.ipynb page would not open (test_hygiene's pattern)."""
    from test_hygiene import local_page_links

    links = local_page_links(edition[lang, path.name])
    assert not links, f"{learner_path(path, lang)} links local pages: {links}"


def test_dropdowns_become_details():
    md = "Intro\n\n```{dropdown} Hint 1\nUse `torch.roll`.\n```\n\n:::{dropdown} Hint 2\nMore.\n:::\n"
    out = make_learner.dropdowns_to_details(md)
    assert "<details><summary>Hint 1</summary>\n\nUse `torch.roll`.\n\n</details>" in out
    assert "<summary>Hint 2</summary>" in out and "{dropdown}" not in out


def test_key_results_become_a_quotation_with_question_marks():
    md = (
        "Intro.\n\n```{admonition} Key results\n:class: key-results\n\n"
        "- The loss falls in {glue:text}`ch5-window` steps ({numref}`fig-5-a`).\n```\n\nAfter."
    )
    out = make_learner.key_results_to_quote(md, "https://b.io/x/chapters/05_t.html")
    assert out == (
        "Intro.\n\n> **Key results**\n>\n> - The loss falls in **?** steps ({numref}`fig-5-a`).\n>\n"
        "> *Each **?** is a number this chapter computes: your run prints it, and the "
        "[book's page](https://b.io/x/chapters/05_t.html) shows it.*\n\nAfter."
    )


def test_learner_notebook_on_a_made_up_exercise():
    def cell(kind, src, t=()):
        c = {"cell_type": kind, "metadata": {"tags": list(t)} if t else {}, "source": src}
        if kind == "code":
            c.update(outputs=[{"output_type": "stream", "name": "stdout", "text": "x"}], execution_count=3)
        return c

    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            cell("markdown", "# T"),
            cell("code", "def f(x):\n    raise NotImplementedError", ["exercise-stub", "skip-execution", "nbval-skip"]),
            cell("markdown", "```{dropdown} Hint\nDouble it.\n```"),
            cell("code", "def f(x):\n    return x * 2 + 0  # the answer", ["solution", "hide-input"]),
            cell("code", "check(f)"),
        ],
    }
    st = make_learner.learner_notebook(nb, "01_t", names={}, book="https://b.io/x", terms={})
    kinds = [(c["cell_type"], c["source"][:12]) for c in st["cells"]]
    assert kinds == [
        ("markdown", "# T"),
        ("markdown", "> **Learner "),
        ("code", "def f(x):\n  "),
        ("markdown", "<details><su"),
        ("code", "check(f)"),
    ]
    assert st["cells"][2]["metadata"]["tags"] == ["exercise-stub"]
    assert all(c["outputs"] == [] for c in st["cells"] if c["cell_type"] == "code")
    assert "x * 2" not in str(st)
    assert "[T](https://b.io/x/chapters/01_t.html)" in st["cells"][1]["source"]


def test_roles_become_links_into_the_published_book():
    bib = (
        "@misc{a2025,\n  author = {Huang, Yi and Zhu, Han and Guo, T},\n  year = {2025},\n}\n"
        "@misc{b2021,\n  author = {Ji, Ziwei and Telgarsky, Matus},\n  year   = {2021},\n}\n"
        "@misc{c2020,\n  author = {{Paper Notes}},\n  year = {2020},\n}\n"
    )
    names = make_learner.bib_names(bib)
    assert names == {
        "a2025": ("Huang et al.", "2025"),
        "b2021": ("Ji and Telgarsky", "2021"),
        "c2020": ("Paper Notes", "2020"),
    }
    md = (
        "{cite:t}`a2025` found {term}`induction heads <induction head>` and a {term}`phase change` {cite}`b2021,c2020`."
    )
    g, r = "https://b.io/x/chapters/glossary.html", "https://b.io/x/chapters/references.html"
    terms = make_learner.glossary_terms("```{glossary}\ninduction head\n  A head.\n\nPhase change\n  A change.\n```\n")
    assert terms == {"induction head": "induction head", "phase change": "Phase change"}
    assert make_learner.roles_to_links(md, names, "https://b.io/x", terms) == (
        f"[Huang et al. (2025)]({r}) found [induction heads]({g}#term-induction-head) and a "
        f"[phase change]({g}#term-Phase-change) ([Ji and Telgarsky 2021]({r}); [Paper Notes 2020]({r}))."
    )
    with pytest.raises(ValueError, match="not a term of the glossary"):
        make_learner.roles_to_links("{term}`nothing`", names, "https://b.io/x", terms)


@pytest.mark.built_book
@pytest.mark.skipif(not (ROOT / "_build/html/index.html").is_file(), reason="book not built; run `make book`")
def test_glossary_links_land_on_a_term_of_the_built_glossary(edition):
    """The learner edition links each term to the published glossary's entry: the anchor must be one the build made."""
    glossary = (ROOT / "_build/html/chapters/glossary.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="(term-[^"]+)"', glossary))
    linked = {
        anchor
        for nb in edition.values()
        for c in nb["cells"]
        for anchor in re.findall(r"glossary\.html#(term-[\w-]+)\)", source(c))
    }
    assert linked, "no glossary link found in the learner edition"
    assert linked <= ids, f"glossary anchors the build did not make: {sorted(linked - ids)}"


def test_figure_references_become_links_numbered_as_in_the_book(tmp_path):
    """{numref}`name` -> [Fig. N.k](chapter#name): every captioned figure shown on the page counts, named or not."""

    def figure_cell(caption: str, name: str = "", cell_tags: tuple[str, ...] = ()) -> dict:
        figure = {"caption": caption, **({"name": name} if name else {})}
        return {"cell_type": "code", "source": "", "metadata": {"mystnb": {"figure": figure}, "tags": list(cell_tags)}}

    cells = [
        {"cell_type": "markdown", "source": "# T", "metadata": {}},
        figure_cell("unnamed, still numbered"),
        figure_cell("removed from the page", "fig-gone", ("remove-cell",)),
        figure_cell("the second shown", "fig-5-b"),
        {"cell_type": "code", "source": "", "metadata": {}},
    ]
    path = tmp_path / "05_x.ipynb"
    path.write_text(make_learner.json.dumps({"cells": cells}))
    figures = make_learner.figure_numbers([path])
    assert figures == {"fig-5-b": ("Fig. 5.2", "05_x")}
    md = make_learner.roles_to_links("As {numref}`fig-5-b` shows.", {}, "https://b.io/x", {}, figures)
    assert md == "As [Fig. 5.2](https://b.io/x/chapters/05_x.html#fig-5-b) shows."
    with pytest.raises(ValueError, match="no captioned figure's name"):
        make_learner.roles_to_links("{numref}`fig-gone`", {}, "https://b.io/x", {}, figures)


@pytest.mark.built_book
@pytest.mark.skipif(not (ROOT / "_build/html/index.html").is_file(), reason="book not built; run `make book`")
def test_figure_numbers_are_the_built_book_s():
    """The learner edition's "Fig. 5.2" must be the number the built page gives that figure."""
    figures = make_learner.figure_numbers(make_learner.chapters())
    assert figures, "no named figure found"
    wrong = {}
    for name, (label, stem) in figures.items():
        page = (ROOT / "_build/html/chapters" / f"{stem}.html").read_text(encoding="utf-8")
        found = re.search(rf'id="{re.escape(name)}".*?<span class="caption-number">([^<]*?)\s*</span>', page, re.DOTALL)
        if found is None or found.group(1).strip() != label:
            wrong[name] = (label, found and found.group(1).strip())
    assert not wrong, f"(learner label, the book's) differ: {wrong}"
