"""One execution of every chapter per CI run: `make test` keeps what nbval executed, `make book` reuses it.

As a pytest plugin (``-p scripts.shared_execution --keep-executed DIR``, as `make test` loads it), it writes every
notebook whose cells all passed under nbval to ``DIR/<name>.ipynb``, outputs filled in and stamped with a
fingerprint of what the outputs depend on (the notebook, ``lib/``, the requirements, the Python and the ``CIRCUITS_*``
settings). A notebook with a failing cell, or a cell skipped that the book would execute, is not kept (and an older
copy of it is removed).

As a script (``python scripts/shared_execution.py DIR CACHE``, as `make book` runs it before building), it empties the
book's execution cache (so that a build never reuses an older build's outputs), then puts into it each kept notebook
whose fingerprint matches the tree as it is now. Jupyter Book (``execute_notebooks: cache``) then takes those outputs
and executes only the other chapters, stopping on an error as before: a chapter that failed under nbval was not kept,
so the book executes it again and fails on the same assert.

nbval runs each cell with ``store_history=False``, and IPython then cannot see that a cell ends in ``;``: a cell such
as ``plot.ocr_loss_curves(...);`` gets its figure twice, once displayed and once as the cell's result, where Jupyter
and the book's own execution show it once. The kept notebook drops the result of every cell that ends in ``;``
(:func:`without_silenced_results`), as Jupyter would.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import sys
import time
import tokenize
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
STAMP = "circuits_execution"
"""Notebook metadata key of a kept notebook: ``{"fingerprint": str, "seconds": float}``."""
DEPENDENCIES = ("lib", "pyproject.toml", "requirements.txt")
"""What, beside the notebook, its outputs depend on (paths relative to the repository root)."""


def fingerprint(notebook: Path, root: Path = ROOT) -> str:
    """SHA-256 over the notebook file, every file under :data:`DEPENDENCIES`, the Python executable and version, and
    the ``CIRCUITS_*`` environment variables: equal fingerprints mean the same execution."""
    digest = hashlib.sha256()
    files = [notebook]
    for name in DEPENDENCIES:
        path = root / name
        files += (
            sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            if path.is_dir()
            else [path]
        )
    for path in files:
        digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path.name).encode())
        digest.update(path.read_bytes())
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("CIRCUITS_"))
    digest.update(repr((sys.executable, sys.version, settings)).encode())
    return digest.hexdigest()


# ---- the pytest plugin ----


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--keep-executed",
        metavar="DIR",
        default=None,
        help="write every notebook that passed under nbval, with its outputs, to DIR (scripts/shared_execution.py)",
    )


def _is_cell(item: pytest.Item) -> bool:
    from nbval.plugin import IPyNbCell

    return isinstance(item, IPyNbCell) and item.config.getoption("--keep-executed") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    if not _is_cell(item):
        return
    report = outcome.get_result()
    notebook = item.parent
    if not hasattr(notebook, "_kept_ok"):
        notebook._kept_ok, notebook._kept_start = True, time.perf_counter()  # type: ignore[union-attr]
    # a cell the book does not execute either (tag skip-execution, as on exercise stubs) may be skipped here
    book_skips = "skip-execution" in item.cell.metadata.get("tags", [])  # type: ignore[attr-defined]
    if report.failed or (report.skipped and not book_skips):
        notebook._kept_ok = False  # type: ignore[union-attr]
    if report.when == "call" and report.passed:
        item.cell.outputs = item.test_outputs or []  # type: ignore[attr-defined]
        item.cell.execution_count = item.cell_num + 1  # type: ignore[attr-defined]


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if not _is_cell(item) or (nextitem is not None and nextitem.parent is item.parent):
        return
    notebook = item.parent
    path = Path(str(notebook.path))  # type: ignore[union-attr]
    target = Path(item.config.getoption("--keep-executed")) / path.name
    target.unlink(missing_ok=True)
    if notebook._kept_ok:  # type: ignore[union-attr]
        nb = without_silenced_results(notebook.nb)  # type: ignore[union-attr]
        seconds = time.perf_counter() - notebook._kept_start  # type: ignore[union-attr]
        nb.metadata[STAMP] = {"fingerprint": fingerprint(path), "seconds": round(seconds, 1)}
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))


def ends_in_semicolon(source: str) -> bool:
    """Whether the last token of a cell's code (comments and blank lines aside) is ``;``, IPython's "no result"."""
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT)
            and t.type != tokenize.DEDENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return False
    return bool(tokens) and tokens[-1].string == ";"


def without_silenced_results(nb: Any) -> Any:
    """``nb`` with the ``execute_result`` outputs of its cells that end in ``;`` removed (in place; returned)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and ends_in_semicolon(cell.source):
            cell.outputs = [o for o in cell.outputs if o.get("output_type") != "execute_result"]
    return nb


# ---- priming the book's execution cache ----


def prime(kept: Path, cache_dir: Path, chapters: Path = ROOT / "chapters") -> list[str]:
    """Empty the execution cache ``cache_dir`` and fill it with the notebooks in ``kept`` that match the chapters in
    ``chapters`` as they are now (same fingerprint); return the names of the chapters primed."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    shutil.rmtree(cache_dir, ignore_errors=True)
    cache = get_cache(str(cache_dir))
    primed = []
    for chapter in sorted(chapters.glob("*.ipynb")):
        copy = kept / chapter.name
        if not copy.is_file():
            continue
        nb = nbformat.read(str(copy), as_version=4)
        stamp = nb.metadata.pop(STAMP, {})
        if stamp.get("fingerprint") != fingerprint(chapter):
            continue
        bundle = CacheBundleIn(nb, str(chapter), data={"execution_seconds": stamp["seconds"]})
        cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
        primed.append(chapter.name)
    return primed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kept", type=Path, help="the folder `make test` kept the executed notebooks in")
    parser.add_argument("cache", type=Path, help="the book's execution cache (emptied first)")
    args = parser.parse_args(argv)
    primed = prime(args.kept, args.cache)
    others = sorted({p.name for p in (ROOT / "chapters").glob("*.ipynb")} - set(primed))
    print(f"reusing the test run's execution of {len(primed)} chapters; executing {len(others)}: {', '.join(others)}")


if __name__ == "__main__":
    main()
