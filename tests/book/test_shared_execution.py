"""scripts/shared_execution.py: `make test` keeps the notebooks that passed under nbval, `make book` reuses only those
that match the tree as it is, and a notebook with a failing assert is never reused (so the book build fails on it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from bookfiles import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import shared_execution  # noqa: E402


def write_notebook(path: Path, *cells: tuple[str, list[str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.cells = [nbformat.v4.new_code_cell(src, metadata={"tags": t} if t else {}) for src, t in cells]
    nbformat.write(nb, str(path))


def test_fingerprint_follows_the_notebook_lib_and_settings(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "requirements.txt").write_text("")
    notebook = tmp_path / "nb.ipynb"
    write_notebook(notebook, ("1 + 1", []))
    monkeypatch.delenv("CIRCUITS_DEVICE", raising=False)
    first = shared_execution.fingerprint(notebook, tmp_path)
    assert shared_execution.fingerprint(notebook, tmp_path) == first
    (tmp_path / "lib" / "a.py").write_text("x = 2\n")
    second = shared_execution.fingerprint(notebook, tmp_path)
    assert second != first, "a change in lib must invalidate the kept execution"
    monkeypatch.setenv("CIRCUITS_DEVICE", "cpu")
    assert shared_execution.fingerprint(notebook, tmp_path) != second, "so must a change of the CIRCUITS_ settings"
    monkeypatch.delenv("CIRCUITS_DEVICE")
    write_notebook(notebook, ("1 + 2", []))
    assert shared_execution.fingerprint(notebook, tmp_path) != second, "and a change of the notebook"


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """Two notebooks run under nbval with the plugin: one passes (an exercise stub skipped, as the book skips it),
    one fails an assert in its second cell."""
    chapters = tmp_path_factory.mktemp("chapters")
    write_notebook(
        chapters / "passing.ipynb",
        ("print('hello')", []),
        ("raise NotImplementedError", ["skip-execution", "nbval-skip"]),
        ("6 * 7", []),
        ("6 * (\n    7\n);  # no result shown", []),
    )
    write_notebook(chapters / "failing.ipynb", ("x = 1", []), ("assert x == 2, 'the claim failed'", []), ("x", []))
    keep = tmp_path_factory.mktemp("kept")
    (keep / "failing.ipynb").write_text("an older copy, to be removed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "--nbval-lax"]
        + ["--nbval-current-env", "-p", "shared_execution", "--keep-executed", str(keep), str(chapters)],
        cwd=chapters,
        env={**env, "PYTHONPATH": str(ROOT / "scripts")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr  # the failing notebook fails the test run
    assert "the claim failed" in run.stdout
    return chapters, keep


def test_keeps_only_the_notebooks_that_passed(kept):
    _, keep = kept
    assert sorted(p.name for p in keep.iterdir()) == ["passing.ipynb"], "a failing notebook must not be kept"
    nb = nbformat.read(str(keep / "passing.ipynb"), as_version=4)
    outputs = [c.outputs for c in nb.cells]
    assert outputs[0][0]["text"] == "hello\n"
    assert outputs[1] == []
    assert outputs[2][0]["data"]["text/plain"] == "42"
    assert outputs[3] == [], "a cell ending in ';' shows no result, as in Jupyter (nbval's kernel would show it)"
    assert nb.metadata[shared_execution.STAMP]["fingerprint"] == shared_execution.fingerprint(kept[0] / "passing.ipynb")


def test_a_final_semicolon_is_found_as_ipython_finds_it():
    assert shared_execution.ends_in_semicolon("plot.x(\n    1,\n);")
    assert shared_execution.ends_in_semicolon("x = 1\nf(x);  # quiet\n\n")
    assert not shared_execution.ends_in_semicolon("f(x)")
    assert not shared_execution.ends_in_semicolon("s = 'a;'")
    assert not shared_execution.ends_in_semicolon("if x:\n    f(x);\ny")
    assert not shared_execution.ends_in_semicolon("def (")  # not Python: left as it is


def test_prime_reuses_matching_notebooks_only(kept, tmp_path):
    from jupyter_cache import get_cache

    chapters, keep = kept
    cache_dir = tmp_path / "cache"
    assert shared_execution.prime(keep, cache_dir, chapters) == ["passing.ipynb"]
    cache = get_cache(str(cache_dir))
    source = nbformat.read(str(chapters / "passing.ipynb"), as_version=4)
    _, merged = cache.merge_match_into_notebook(source)  # what Jupyter Book's "cache" mode does
    assert merged.cells[2].outputs[0]["data"]["text/plain"] == "42"
    with pytest.raises(KeyError):  # the failing notebook is not in the cache: the book executes it and fails
        cache.match_cache_notebook(nbformat.read(str(chapters / "failing.ipynb"), as_version=4))
    changed = chapters.parent / "changed"
    changed.mkdir()
    write_notebook(changed / "passing.ipynb", ("print('hello, changed')", []))
    assert shared_execution.prime(keep, cache_dir, changed) == [], "a chapter changed since the test run is executed"
    assert not get_cache(str(cache_dir)).list_cache_records(), "priming empties the cache first"


def test_make_wires_it():
    makefile = (ROOT / "Makefile").read_text()
    test_recipe = makefile.split("\ntest:")[1].split("\n\n")[0]
    book_recipe = makefile.split("\nbook:")[1].split("\n\n")[0]
    assert "-p scripts.shared_execution --keep-executed $(EXECUTED)" in test_recipe
    assert "scripts/shared_execution.py $(EXECUTED) _build/.jupyter_cache" in book_recipe
    assert book_recipe.index("shared_execution") < book_recipe.index("jupyter-book build")
