"""The book's files are in order: toc and chapters agree, notebooks are clean and share one setup cell."""

import math
import os
import re
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest
import yaml
from bookfiles import ROOT, code_cells, config, load, notebooks, resolve, source, tags, toc_files

sys.path.insert(0, str(ROOT / "scripts"))
import check_repository_url  # noqa: E402
import reading_times  # noqa: E402
from reading_times import all_exercises, chapter_numbers, chapter_seconds  # noqa: E402

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
    # the map links the published pages (.../chapters/01_ocr_data.html) so that they open from Colab too
    in_map = re.findall(r"\[(\d+)\. ([^\]]+)\]\([^)\s]*/(\d\d_\w+)\.html\)", landing)
    assert [(int(number), title, stem) for number, title, stem in in_map] == [
        (k, title, Path(file).name) for k, (file, title) in enumerate(entries, start=1)
    ], "the chapter map's '[N. title](.../file.html)' links must match the numbered toc entries and their titles"


def test_config_is_strict_and_points_at_main():
    cfg = config()
    assert cfg["only_build_toc_files"] is True
    assert cfg["repository"]["branch"] == "main"
    assert cfg["sphinx"]["config"]["nb_execution_raise_on_error"] is True
    # "cache": reuse of `make test`'s execution, never of an older build (tests/book/test_shared_execution.py)
    assert cfg["execute"]["execute_notebooks"] == "cache"
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
    # the reader of the book does not need it (the Colab bar says how to run the chapter); notebooks keep it
    assert "remove-cell" in tags(setup), f"{path.name}: the setup cell needs tag remove-cell (left out of the HTML)"


def test_setup_cell_is_identical_everywhere_and_uses_the_config_url():
    setups = {p.name: source(code_cells(load(p))[0]) for p in NOTEBOOKS}
    reference = setups["00_start_here.ipynb"]
    differ = [name for name, text in setups.items() if text != reference]
    assert not differ, f"setup cell differs from 00_start_here's in: {differ}"
    url = config()["repository"]["url"]
    assert f'REPOSITORY = "{url}"' in reference, f"setup cell must install from _config.yml's repository.url ({url})"


def setup_source() -> str:
    return source(code_cells(load(ROOT / "chapters" / "00_start_here.ipynb"))[0])


def test_setup_cell_names_the_package_version():
    """The setup cell skips the install when lib is installed at this version: it must be the package's."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f'LIB_VERSION = "{version}"' in setup_source(), f"setup cell must say LIB_VERSION = {version!r}"
    import lib

    assert lib.__version__ == version


def test_start_here_has_the_setup_cell_after_the_opening_and_the_chapter_map():
    cells = load(ROOT / "chapters" / "00_start_here.ipynb")["cells"]
    setup = next(i for i, c in enumerate(cells) if "setup" in tags(c))
    chapter_map = next(i for i, c in enumerate(cells) if "## Chapter map" in source(c))
    assert 0 < chapter_map < setup, "00_start_here: the setup cell comes after the opening text and the chapter map"


def run_setup_in_fake_colab(monkeypatch, installed: str | None, pip_returncode: int) -> list[list[str]]:
    """Execute the setup cell with a stub google.colab module; pip is not run, its calls are returned."""
    import importlib.metadata

    calls: list[list[str]] = []

    def fake_version(name: str) -> str:
        assert name == "circuits-from-scratch"
        if installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, pip_returncode, "pip says hello", "pip error text")

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(importlib.metadata, "version", fake_version)
    monkeypatch.setattr(subprocess, "run", fake_run)
    exec(compile(setup_source(), "setup", "exec"), {})
    return calls


def test_setup_cell_in_colab_installs_quietly_once(monkeypatch, capsys):
    calls = run_setup_in_fake_colab(monkeypatch, installed=None, pip_returncode=0)
    assert len(calls) == 1 and calls[0][1:4] == ["-m", "pip", "install"]
    assert "--quiet" in calls[0] and calls[0][calls[0].index("--progress-bar") + 1] == "off"
    assert calls[0][-1] == f"git+{config()['repository']['url']}@main"
    out = capsys.readouterr().out
    assert out.startswith("Installing lib") and re.search(r"Done in \d+ s", out)


def test_setup_cell_second_run_is_a_no_op(monkeypatch, capsys):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert run_setup_in_fake_colab(monkeypatch, installed=version, pip_returncode=0) == []
    assert "installed already" in capsys.readouterr().out
    # an older lib is replaced
    assert len(run_setup_in_fake_colab(monkeypatch, installed="0.0.1", pip_returncode=0)) == 1


def test_setup_cell_shows_pip_output_when_the_install_fails(monkeypatch, capsys):
    with pytest.raises(RuntimeError, match="pip could not install lib"):
        run_setup_in_fake_colab(monkeypatch, installed=None, pip_returncode=1)
    assert "pip error text" in capsys.readouterr().out


def test_setup_cell_does_nothing_outside_colab(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("the setup cell ran a command outside Colab"))
    exec(compile(setup_source(), "setup", "exec"), {})


# A Markdown link or an HTML href to a local .md/.ipynb page: it opens neither in Colab nor in the learner edition.
LOCAL_PAGE = re.compile(r"(?:\]\(|href=[\"'])(?!https?://)[^)\"'\s]*\.(?:md|ipynb)\b")
BOOK_PAGE = re.compile(re.escape(check_repository_url.pages_url()) + r"/([\w./-]+?)\.html")


def local_page_links(nb: dict) -> list[str]:
    return [m.group(0) for c in nb["cells"] if c["cell_type"] == "markdown" for m in LOCAL_PAGE.finditer(source(c))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_chapter_links_a_local_page(path):
    links = local_page_links(load(path))
    assert not links, (
        f"{path.name} links local pages {links}: link the published page instead, "
        f"{check_repository_url.pages_url()}/chapters/NAME.html"
    )


def test_local_page_link_pattern():
    assert local_page_links(
        {"cells": [{"cell_type": "markdown", "source": "[a](performance.md) [b](../x/01_y.ipynb)"}]}
    )
    assert local_page_links({"cells": [{"cell_type": "markdown", "source": '<a href="guide.md#x">g</a>'}]})
    ok = f"[a]({check_repository_url.pages_url()}/chapters/performance.html) [b](https://x.org/a.md)"
    assert not local_page_links({"cells": [{"cell_type": "markdown", "source": ok}]})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_links_to_the_published_book_name_its_pages(path):
    """Every link to the published book names a page the book builds (a toc entry)."""
    pages = {str(resolve(e).relative_to(ROOT).with_suffix("")) for e in toc_files()}
    base = check_repository_url.pages_url()
    for cell in load(path)["cells"]:
        for match in BOOK_PAGE.finditer(source(cell)):
            assert match.group(1) in pages, f"{path.name} links {match.group(0)}, not a page of the book"
        # a fork changes _config.yml's repository.url: every link to a Pages site must follow it
        for other in re.findall(r"https://[\w.-]+\.github\.io/[^\s)\"']*", source(cell)):
            assert other.startswith(base + "/"), f"{path.name} links {other}; the book is published at {base}"


def test_pages_address_follows_the_repository_address():
    assert check_repository_url.pages_url("https://github.com/Some-One/my-book") == "https://some-one.github.io/my-book"
    assert check_repository_url.pages_url("https://github.com/a/b.git/") == "https://a.github.io/b"
    with pytest.raises(SystemExit):
        check_repository_url.pages_url("https://gitlab.com/a/b")


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
            # the book's toggle says what it opens (myst-nb's default is "Show code cell source")
            assert cell["metadata"].get("mystnb", {}).get("code_prompt_show") == "Show the solution", (
                f"{path.name}: solution needs metadata mystnb.code_prompt_show 'Show the solution'"
            )


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


def exercises(path):
    """The chapter's exercises in order: (id, difficulty, kind, whether a check cell follows before the next one)."""
    found = []
    for cell in load(path)["cells"]:
        text = source(cell)
        if cell["cell_type"] == "code":
            if found and re.search(r"\b(ocr|induction)_checks\.", text):
                found[-1]["checked"] = True
            continue
        lines = [ln for ln in text.splitlines() if ln.strip()]
        for i, line in enumerate(lines):
            heading = EXERCISE.match(line)
            meta = META.match(lines[i + 1]) if heading and i + 1 < len(lines) else None
            if heading and meta:
                difficulty = int(re.search(r"Difficulty (\d)", lines[i + 1])[1])
                found.append({"id": line, "difficulty": difficulty, "kind": meta["kind"], "checked": False})
    return found


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if 1 <= int(p.name[:2]) <= 8], ids=lambda p: p.name)
def test_every_chapter_has_a_ladder_of_checked_exercises(path):
    """Issue 16: >= 4 checked exercises, >= 2 of them building the mechanism, difficulty climbing from 1 to 3."""
    checked = [e for e in exercises(path) if e["kind"] != "open question"]
    unchecked = [e["id"] for e in checked if not e["checked"]]
    assert not unchecked, f"{path.name}: no check cell (`ocr_checks.` / `induction_checks.`) after {unchecked}"
    assert len(checked) >= 4, f"{path.name}: {len(checked)} checked exercises, the book wants at least 4"
    builds = [e for e in checked if e["kind"] == "builds the mechanism"]
    assert len(builds) >= 2, f"{path.name}: {len(builds)} exercises build the mechanism, the book wants at least 2"
    ladder = [e["difficulty"] for e in checked]
    assert ladder[0] == 1 and max(ladder) == 3 and ladder == sorted(ladder), (
        f"{path.name}: difficulties {ladder} should climb from 1 to 3 without going down"
    )


GUIDE = ROOT / "chapters" / "instructor_guide.md"
GUIDE_ROW = re.compile(r"^\| (\d+) \| (\d+\.\d+) (.+?) \| (\d+) \| ([123]) \| ([a-z ]+) \|$", re.MULTILINE)


def test_instructor_guide_lists_every_exercise_as_the_chapters_do():
    rows = {m[2]: (m[3], int(m[4]), int(m[5]), m[6]) for m in GUIDE_ROW.finditer(GUIDE.read_text())}
    assert rows == all_exercises(), "the instructor guide's exercise table disagrees with the chapters' headers"


SLACK = 1.25
"""Issue 25: a session plan's slot holds its exercises, its chapters' runs at the slower laptop's speed and their
Colab installs with 25% to spare."""
COLAB_INSTALL_MINUTES = 3
CHAPTER_LINK = re.compile(r"\[(?:[Cc]hapter )?(\d+)\]\([^)]*?/chapters/\d\d_\w+\.html\)")


def test_the_chapter_times_table_covers_every_chapter_at_both_speeds():
    times = chapter_seconds()
    assert sorted(times) == chapter_numbers(), sorted(times)
    assert all(slow == 2 * ci for ci, slow in times.values()), times


def pre_reading(line: str) -> list[int]:
    """The chapters a plan's '*Before the session:*' line names: each linked chapter, '[1](...)-[8](...)' a range."""
    link = CHAPTER_LINK.pattern
    numbers: list[int] = []
    for match in re.finditer(f"{link}(?:-{link})?", line):
        first, last = int(match[1]), int(match[2] or match[1])
        numbers += range(first, last + 1)
    return numbers


def test_pre_reading_is_parsed():
    page = "https://a.github.io/b/chapters"
    line = (
        f"reads chapters [5]({page}/05_x.html), [7]({page}/07_y.html) and [1]({page}/01_z.html)-[3]({page}/03_w.html)"
    )
    assert pre_reading(line) == [5, 7, 1, 2, 3]
    assert pre_reading(f"reads [chapter 5]({page}/05_x.html)") == [5]


def test_session_plans_fit_their_slots_with_slack():
    """Issue 40: each plan names what participants read before it ('*Before the session:* ... (about N minutes of
    reading)', N the chapters' reading times); each row 'H:MM | ...': the named exercises' minutes, plus each
    chapter the row opens ('Start here', 'Chapter N') run at the slower speed and installed in Colab, plus its
    reading time when it was not read before, times 1.25, fit before the next row."""
    minutes = {k: v[1] for k, v in all_exercises().items()}
    slow_minutes = {n: math.ceil(slow / 60) for n, (_, slow) in chapter_seconds().items()}
    reading = {n: reading_times.reading_minutes(reading_times.notebook(n)) for n in chapter_numbers()}
    plans = re.findall(
        r"\*\*[^*]+\*\*\n\n\*Before the session:\*([^\n]+)\n\n\| time \| what \|\n\|---\|---\|\n((?:\|.*\|\n)+)",
        GUIDE.read_text(),
    )
    assert len(plans) == 3, "expected three session plans, each with its '*Before the session:*' line"
    for before, plan in plans:
        read_before = pre_reading(before)
        stated = re.search(r"about (\d+) minutes of reading", before)
        assert stated and int(stated[1]) == sum(reading[n] for n in read_before), (
            f"{before!r}: the reading before the session is {sum(reading[n] for n in read_before)} minutes "
            "(scripts/reading_times.py)"
        )
        rows = [re.match(r"^\| (\d+):(\d\d) \| (.*) \|$", ln) for ln in plan.strip().splitlines()]
        starts = [60 * int(r[1]) + int(r[2]) for r in rows]
        for row, start, end in zip(rows, starts, starts[1:]):
            what = row[3]
            named = re.findall(r"\b(\d+\.\d+)\b", what.split("exercise", 1)[1]) if "exercise" in what else []
            chapters = [int(n) for n in re.findall(r"\bChapter (\d)\b", what)] + ([0] * what.startswith("Start here"))
            need = sum(minutes[e] for e in named) + sum(
                slow_minutes[c] + COLAB_INSTALL_MINUTES + (0 if c in read_before or c == 0 else reading[c])
                for c in chapters
            )
            assert SLACK * need <= end - start, (
                f"{what[:60]!r}: exercises {named} and chapters {chapters} need {need} min, x{SLACK} = "
                f"{SLACK * need:.0f}; the slot has {end - start}"
            )


def test_the_start_page_time_table_is_current():
    """Issue 40: the start page's "Your time" table is what scripts/reading_times.py computes from the chapters."""
    start = "\n".join(source(c) for c in load(reading_times.START)["cells"])
    assert reading_times.start_page_table() in start, "stale: run `python scripts/reading_times.py`"


def test_the_mistakes_table_covers_every_checked_exercise_once():
    rows = re.findall(r"^\| (\d+\.\d+) \| .+ \|$", GUIDE.read_text().split("## Mistakes the checks catch", 1)[1], re.M)
    checked = [k for k, v in all_exercises().items() if v[3] != "open question"]
    assert sorted(rows) == sorted(checked), set(rows) ^ set(checked)


def test_strict_checks_only_where_the_build_must_fail():
    """Issue 25: ``CIRCUITS_STRICT_CHECKS`` (a failed exercise raises) is set for ``make test``, ``make book``,
    ``make colab`` and ``make seeds`` (issue 38: the chapters on alternate seeds, as ``make test`` runs them) only;
    ``make lab``, the learner's path, falls back to the book's version so "Run all" never stops."""
    # as a learner's shell runs it: not inside `make test`, whose exported setting the sub-make would inherit
    outside = ("CIRCUITS_STRICT_CHECKS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    env = {k: v for k, v in os.environ.items() if k not in outside}
    database = subprocess.run(["make", "-pn", "lab"], cwd=ROOT, capture_output=True, text=True, env=env).stdout
    strict = re.findall(r"^(\S+): (?:export )?CIRCUITS_STRICT_CHECKS := 1$", database, re.M)
    assert sorted(strict) == ["book", "colab", "seeds", "test"], strict
    assert not re.search(r"^(?:export )?CIRCUITS_STRICT_CHECKS\s*:?=", database, re.M), "set for every target"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_bare_check_call(path):
    """Issue 25: a check is never called bare (a failure would stop "Run all"); it goes through
    ``framework.passing_or_reference``, which falls back to the book's version."""
    bare = [
        match[0]
        for cell in code_cells(load(path))
        for match in re.finditer(r"\b(?:ocr|induction)_checks\.check_\w+\(", source(cell))
    ]
    assert not bare, f"{path.name}: call these through framework.passing_or_reference: {bare}"
