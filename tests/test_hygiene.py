"""The book's files are in order: toc and chapters agree, notebooks are clean and share one setup cell."""

import re
from pathlib import Path

import pytest
import yaml
from book import ROOT, code_cells, config, load, notebooks, resolve, source, tags, toc_files

NOTEBOOKS = notebooks()
IDS = [p.name for p in NOTEBOOKS]


def test_every_toc_entry_exists():
    for entry in toc_files():
        resolve(entry)


def test_every_chapter_is_in_the_toc():
    listed = {resolve(e).resolve() for e in toc_files()}
    missing = [
        p.name
        for p in sorted((ROOT / "chapters").glob("*"))
        if p.suffix in (".ipynb", ".md") and p.resolve() not in listed
    ]
    assert not missing, f"chapters not listed in _toc.yml: {missing}"


def numbered_toc_entries() -> list[tuple[str, str]]:
    """(file, sidebar title) of each entry in a numbered part of _toc.yml, in order (numbered 1, 2, ...)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [
        (entry["file"], entry.get("title", ""))
        for part in toc["parts"]
        if part.get("numbered")
        for entry in part["chapters"]
    ]


def test_toc_numbers_the_chapters_as_the_chapter_map_does():
    """The sidebar reads '1. Building the data' exactly where the chapter map on the landing page does."""
    entries = numbered_toc_entries()
    assert [Path(file).name for file, _ in entries] == [p.stem for p in NOTEBOOKS if p.stem[:2] != "00"], (
        "the numbered parts of _toc.yml must list chapters 01, 02, ... in order"
    )
    landing = "\n".join(source(c) for c in load(ROOT / "chapters" / "00_start_here.ipynb")["cells"])
    in_map = re.findall(r"\[(\d+)\. ([^\]]+)\]\((\d\d_\w+)\.ipynb\)", landing)
    assert [(int(number), title, stem) for number, title, stem in in_map] == [
        (k, title, Path(file).name) for k, (file, title) in enumerate(entries, start=1)
    ], "the chapter map's '[N. title](file)' links must match the numbered toc entries and their titles"


def test_config_is_strict_and_points_at_main():
    cfg = config()
    assert cfg["only_build_toc_files"] is True
    assert cfg["repository"]["branch"] == "main"
    assert cfg["sphinx"]["config"]["nb_execution_raise_on_error"] is True
    assert cfg["execute"]["execute_notebooks"] == "force"
    for pattern in (".venv", ".pytest_cache", "_build", "**/site-packages"):
        assert pattern in cfg["exclude_patterns"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_committed_without_outputs(path):
    dirty = [i for i, c in enumerate(code_cells(load(path))) if c.get("outputs") or c.get("execution_count")]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs or execution counts; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_starts_with_title_and_setup(path):
    nb = load(path)
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and re.match(r"# \S", source(first)), (
        f"{path.name}: first cell must be a '# Title' markdown cell"
    )
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    setup = code_cells(nb)[0]
    assert "setup" in tags(setup), f"{path.name}: the first code cell must be the setup cell (tag 'setup')"


def test_setup_cell_is_identical_everywhere_and_uses_the_config_url():
    setups = {p.name: source(code_cells(load(p))[0]) for p in NOTEBOOKS}
    reference = setups["00_start_here.ipynb"]
    differ = [name for name, text in setups.items() if text != reference]
    assert not differ, f"setup cell differs from 00_start_here's in: {differ}"
    url = config()["repository"]["url"]
    assert f'REPOSITORY = "{url}"' in reference, f"setup cell must install from _config.yml's repository.url ({url})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_exercise_cells_are_tagged(path):
    """Stubs are skipped by the book build and by nbval; solutions are collapsed in the book."""
    for cell in code_cells(load(path)):
        t = tags(cell)
        if "exercise-stub" in t:
            assert {"skip-execution", "nbval-skip"} <= set(t), (
                f"{path.name}: stub needs tags skip-execution and nbval-skip: {source(cell)[:80]!r}"
            )
        if "solution" in t:
            assert "hide-input" in t, f"{path.name}: solution needs tag hide-input: {source(cell)[:80]!r}"
            # Colab ignores hide-input; a form cell ('# @title' first line, cellView "form") stays folded there.
            assert source(cell).startswith("# @title "), f"{path.name}: solution must start '# @title Solution'"
            assert cell["metadata"].get("cellView") == "form", f"{path.name}: solution needs metadata cellView: form"


EXERCISE = re.compile(r"^#{2,3} Exercise (?P<chapter>\d+)\.(?P<k>\d+)( \(open\))?: \S")
KINDS = ("builds the mechanism", "computes a metric", "open question")
META = re.compile(
    r"^\*Difficulty [123] of 3 · importance: [^·]+ · about \d+ minutes · (?P<kind>" + "|".join(KINDS) + r")\*$"
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_exercise_headers_are_uniform(path):
    """'### Exercise C.k: title' then '*Difficulty d of 3 · importance: ... · about N minutes · KIND*'."""
    chapter = int(path.name[:2])
    for cell in load(path)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines = [ln for ln in source(cell).splitlines() if ln.strip()]
        for i, line in enumerate(lines):
            if re.match(r"^#+ Exercise(?!s$)", line):
                match = EXERCISE.match(line)
                assert match, f"{path.name}: exercise heading {line!r} is not '### Exercise {chapter}.k: title'"
                assert int(match["chapter"]) == chapter, f"{path.name}: {line!r} is numbered for another chapter"
                meta = META.match(lines[i + 1]) if i + 1 < len(lines) else None
                assert meta, (
                    f"{path.name}: after {line!r} write '*Difficulty d of 3 · importance: ... · about N minutes"
                    f" · KIND*' with KIND one of {KINDS}"
                )
                is_open = match.group(3) is not None
                assert is_open == (meta["kind"] == "open question"), (
                    f"{path.name}: {line!r}: '(open)' in the heading goes with the kind 'open question', and only then"
                )
