"""What a reader of a chapter meets, checked on the notebooks: the key results first, long code folded, every open
exercise discussed where it is asked.

- Every chapter (1 on) opens with a "Key results" box (lib/show/key_results.py) before its first shown code cell: two
  to four results, each with a number the chapter computes (a glue role the chapter records exactly once) and the
  figure that shows it (a numref role).
- No code cell of more than 40 lines (about a screen at 1280 x 800) is shown unfolded; a folded one says what its
  toggle opens.
- Every open exercise is followed, before the next heading, by a folded discussion.
"""

from __future__ import annotations

import re
import sys

import pytest
from bookfiles import ROOT, code_cells, load, notebooks, source, tags

sys.path.insert(0, str(ROOT / "scripts"))
import make_learner  # noqa: E402

CHAPTERS = [p for p in notebooks() if re.match(r"(0[1-9]|1[0-9])_", p.name)]
IDS = [p.stem for p in CHAPTERS]
GLUE_NAME = re.compile(r"\{glue:text\}`(?P<name>[^`:]+)(?::[^`]*)?`")
RECORD = re.compile(r"key_results\.record\(\s*\"(?P<name>[^\"]+)\"")
FOLDED = {"remove-cell", "remove-input", "hide-input", "hide-cell", "solution"}
SCREEN_LINES = 40


def key_results_box(nb: dict) -> re.Match[str] | None:
    """The key-results admonition, if it is in a markdown cell before the first code cell a reader sees."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and not {"remove-cell", "remove-input"} & set(tags(cell)):
            return None
        if cell["cell_type"] == "markdown" and (box := make_learner.KEY_RESULTS.search(source(cell))):
            return box
    return None


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_every_chapter_opens_with_its_key_results(path):
    nb = load(path)
    box = key_results_box(nb)
    assert box, f"{path.name}: no ```{{admonition}} Key results / :class: key-results box before the first code cell"
    # one result per list item; an item's wrapped lines are indented
    items = re.split(r"^- ", box["body"], flags=re.MULTILINE)[1:]
    assert 2 <= len(items) <= 4, f"{path.name}: the box has {len(items)} results; a reader wants two to four"
    for item in items:
        assert GLUE_NAME.search(item), f"{path.name}: a result without a computed number: {item[:80]!r}"
        assert "{numref}`fig-" in item, f"{path.name}: a result without its figure: {item[:80]!r}"
    recorded = [m["name"] for c in code_cells(nb) for m in RECORD.finditer(source(c))]
    for name in (m["name"] for m in GLUE_NAME.finditer(box["body"])):
        assert recorded.count(name) == 1, (
            f"{path.name}: the box shows {name!r}, recorded {recorded.count(name)} times (key_results.record)"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_long_code_cell_is_shown_unfolded(path):
    for cell in code_cells(load(path)):
        lines = len(source(cell).splitlines())
        if set(tags(cell)) & FOLDED:
            if "hide-input" in tags(cell) and "solution" not in tags(cell):
                prompt = cell["metadata"].get("mystnb", {}).get("code_prompt_show", "")
                assert prompt.startswith("Show the "), f"{path.name}: a folded cell's toggle must say what it opens"
                said = re.fullmatch(r"Show the code \((\d+) lines\)", prompt)
                assert not said or int(said[1]) == lines, (
                    f"{path.name}: a toggle says {prompt!r}, its cell has {lines} lines: {source(cell)[:60]!r}"
                )
            continue
        assert lines <= SCREEN_LINES, (
            f"{path.name}: a {lines}-line code cell is shown unfolded (at most {SCREEN_LINES}, about a screen); "
            f"tag it hide-input or move its code into lib: {source(cell)[:80]!r}"
        )


OPEN_EXERCISE = re.compile(r"^#{2,3} Exercise \d+\.\d+ \(open\)", re.MULTILINE)
DISCUSSION = re.compile(r"^(`{3,}|:{3,})\{dropdown\} Discussion", re.MULTILINE)


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_every_open_exercise_is_discussed_where_it_is_asked(path):
    cells = load(path)["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown" or not (m := OPEN_EXERCISE.search(source(cell))):
            continue
        # the exercise's own text: up to the next heading, in this cell or in the markdown cells after it
        after = re.split(r"^#{1,3} ", source(cell)[m.end() :], maxsplit=1, flags=re.MULTILINE)[0]
        for later in cells[i + 1 :]:
            if later["cell_type"] != "markdown":
                continue
            before_heading = re.split(r"^#{1,3} ", source(later), maxsplit=1, flags=re.MULTILINE)
            after += before_heading[0]
            if len(before_heading) > 1:
                break
        assert DISCUSSION.search(after), (
            f"{path.name}: {m.group(0)!r} has no folded discussion (a ```{{dropdown}} Discussion block) after it"
        )
