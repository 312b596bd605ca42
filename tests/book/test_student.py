"""The workshop hand-out (`make student`): no solution survives, and every stub pairs with its solution.

"Every stub, once replaced by its solution, passes its check" is checked in two halves: here, that
replacing each stub of the student notebook by its solution gives back exactly the code the chapter
runs (same cells, same order, checks included); and nbval, which executes that chapter code with its
checks in `make test`.
"""

import ast
import sys

import pytest
from bookfiles import ROOT, code_cells, load, notebooks, source, tags

sys.path.insert(0, str(ROOT / "scripts"))
import make_student  # noqa: E402

NOTEBOOKS = notebooks()
IDS = [p.name for p in NOTEBOOKS]


def defined_names(code: str) -> set[str]:
    return {n.name for n in ast.parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def significant_lines(code: str) -> list[str]:
    return [
        ln.strip()
        for ln in code.splitlines()
        if ln.strip() and not ln.strip().startswith(("#", '"""', "def ", "return"))
    ]


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    make_student.main(out)
    return {p.name: load(out / p.name) for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_solution_survives(path, student):
    nb, st = load(path), student[path.name]
    assert not [c for c in st["cells"] if "solution" in tags(c)]
    student_code = "\n".join(source(c) for c in code_cells(st))
    for cell in code_cells(nb):
        if "solution" in tags(cell):
            leaked = [
                ln
                for ln in significant_lines(source(cell))
                if ln not in ("pass",) and ln in student_code and len(ln) > 12
            ]
            assert not leaked, f"{path.name}: solution lines left in the student notebook: {leaked[:3]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stubs_pair_with_solutions(path, student):
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
    # Student notebook with each stub replaced by its solution == the code the chapter runs.
    solution_of = {source(cells[s]): source(cells[sol]) for s, sol in zip(stubs, solutions)}
    solved = [solution_of.get(source(c), source(c)) for c in code_cells(student[path.name])]
    chapter = [source(c) for c in cells if "exercise-stub" not in tags(c)]
    assert solved == chapter


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_student_notebook_is_clean(path, student):
    st = student[path.name]
    for cell in code_cells(st):
        assert not cell["outputs"] and cell["execution_count"] is None
        assert not set(tags(cell)) & make_student.SKIP_TAGS
    for cell in st["cells"]:
        if cell["cell_type"] == "markdown":
            assert "{dropdown}" not in source(cell)
            assert "{term}" not in source(cell) and "{cite" not in source(cell), "MyST roles show raw in Jupyter"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_student_notebook_links_no_local_page(path, student):
    """The hand-out holds notebooks only: a link to a local .md/.ipynb page would not open (test_hygiene's pattern)."""
    from test_hygiene import local_page_links

    links = local_page_links(student[path.name])
    assert not links, f"student {path.name} links local pages: {links}"


def test_dropdowns_become_details():
    md = "Intro\n\n```{dropdown} Hint 1\nUse `torch.roll`.\n```\n\n:::{dropdown} Hint 2\nMore.\n:::\n"
    out = make_student.dropdowns_to_details(md)
    assert "<details><summary>Hint 1</summary>\n\nUse `torch.roll`.\n\n</details>" in out
    assert "<summary>Hint 2</summary>" in out and "{dropdown}" not in out


def test_student_notebook_on_a_made_up_exercise():
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
    st = make_student.student_notebook(nb)
    kinds = [(c["cell_type"], c["source"][:12]) for c in st["cells"]]
    assert kinds == [
        ("markdown", "# T"),
        ("markdown", "> **Workshop"),
        ("code", "def f(x):\n  "),
        ("markdown", "<details><su"),
        ("code", "check(f)"),
    ]
    assert st["cells"][2]["metadata"]["tags"] == ["exercise-stub"]
    assert all(c["outputs"] == [] for c in st["cells"] if c["cell_type"] == "code")
    assert "x * 2" not in str(st)


def test_roles_become_plain_text():
    bib = (
        "@misc{a2025,\n  author = {Huang, Yi and Zhu, Han and Guo, T},\n  year = {2025},\n}\n"
        "@misc{b2021,\n  author = {Ji, Ziwei and Telgarsky, Matus},\n  year   = {2021},\n}\n"
        "@misc{c2020,\n  author = {{Paper Notes}},\n  year = {2020},\n}\n"
    )
    names = make_student.bib_names(bib)
    assert names == {
        "a2025": ("Huang et al.", "2025"),
        "b2021": ("Ji and Telgarsky", "2021"),
        "c2020": ("Paper Notes", "2020"),
    }
    md = (
        "{cite:t}`a2025` found {term}`induction heads <induction head>` and a {term}`phase change` {cite}`b2021,c2020`."
    )
    assert make_student.roles_to_text(md, names) == (
        "Huang et al. (2025) found induction heads and a phase change (Ji and Telgarsky 2021; Paper Notes 2020)."
    )
