"""How long each chapter takes a reader, from the book's own files: the start page's table and the session plans'.

- reading: the words of a chapter's prose (its markdown cells) at :data:`WORDS_PER_MINUTE`, rounded up to 5 minutes;
- running: the instructor guide's table of measured chapter times, at the slower laptop's speed;
- exercises: the minutes each exercise's header states (``*Difficulty d of 3 · ... · about N minutes · kind*``).

Usage: ``python scripts/reading_times.py`` rewrites the table of the start page's "Your time" section;
``tests/book/test_hygiene.py`` fails when that table is stale (a chapter's prose, exercises or run time changed).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from check_repository_url import pages_url

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
GUIDE = CHAPTERS / "instructor_guide.md"
START = CHAPTERS / "00_start_here.ipynb"

WORDS_PER_MINUTE = 150
"""A careful reading pace for technical prose with equations and figures (a novel reads at about 250)."""

EXERCISE = re.compile(r"^#{2,3} Exercise (?P<chapter>\d+)\.(?P<k>\d+)( \(open\))?: \S")
EXERCISE_META = re.compile(r"^\*Difficulty (\d) of 3 · importance: [^·]+ · about (\d+) minutes · (.+)\*$")


def notebook(number: int) -> Path:
    """The chapter notebook numbered ``number`` (0 is the start page)."""
    (path,) = CHAPTERS.glob(f"{number:02d}_*.ipynb")
    return path


def chapter_numbers() -> list[int]:
    """The numbers of the chapter notebooks, the start page's 0 included (from their file names ``NN_*.ipynb``)."""
    return sorted(int(path.name[:2]) for path in CHAPTERS.glob("[0-9][0-9]_*.ipynb"))


def cells(path: Path, kind: str) -> list[str]:
    """The sources of ``path``'s cells of type ``kind`` ("markdown" or "code")."""
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == kind]


def prose_words(path: Path) -> int:
    """The number of words in the notebook's markdown cells."""
    return sum(len(text.split()) for text in cells(path, "markdown"))


def reading_minutes(path: Path) -> int:
    """Minutes to read the notebook's prose at :data:`WORDS_PER_MINUTE`, rounded up to a multiple of 5."""
    return 5 * math.ceil(prose_words(path) / WORDS_PER_MINUTE / 5)


def all_exercises() -> dict[str, tuple[str, int, int, str]]:
    """Exercise id ("5.2") -> (title, minutes, difficulty, kind), for every exercise of every chapter."""
    found = {}
    for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb")):
        for text in cells(path, "markdown"):
            lines = [ln for ln in text.splitlines() if ln.strip()]
            for line, following in zip(lines, lines[1:]):
                heading, meta = EXERCISE.match(line), EXERCISE_META.match(following)
                if heading and meta:
                    title = line.split(": ", 1)[1]
                    found[f"{heading['chapter']}.{heading['k']}"] = (title, int(meta[2]), int(meta[1]), meta[3])
    return found


def chapter_seconds() -> dict[int, tuple[int, int]]:
    """Chapter -> (seconds on the CI machine, seconds on a laptop twice as slow), from the guide's table.

    Raises:
        ValueError: the guide has no such table.
    """
    table = re.search(
        r"\| chapter \| CI machine \(s\) \| laptop 2x slower \(s\) \|\n\|---\|---\|---\|\n((?:\|.*\|\n)+)",
        GUIDE.read_text(),
    )
    if table is None:
        raise ValueError(f"{GUIDE.name} has no table '| chapter | CI machine (s) | laptop 2x slower (s) |'")
    rows = re.findall(r"^\| \[[^\]]*\]\((\d\d)_\w+\.ipynb\) \| (\d+) \| (\d+) \|$", table.group(1), re.M)
    return {int(n): (int(ci), int(slow)) for n, ci, slow in rows}


def learning_goals() -> dict[int, str]:
    """Chapter -> what a participant can do after it, from the guide's learning-goals table."""
    section = GUIDE.read_text().split("## Learning goals", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| \[[^\]]*\]\((\d\d)_\w+\.ipynb\) \| (.+) \|$", section, re.M)
    return {int(n): goal for n, goal in rows}


def start_page_table() -> str:
    """The start page's table: per chapter, what you can do after it, reading, running and exercise minutes."""
    exercise_minutes: dict[int, int] = {}
    for key, (_, minutes, _, _) in all_exercises().items():
        chapter = int(key.split(".")[0])
        exercise_minutes[chapter] = exercise_minutes.get(chapter, 0) + minutes
    seconds, goals = chapter_seconds(), learning_goals()
    lines = [
        "| chapter | after it you can | read (min) | run (min) | exercises (min) |",
        "|---|---|---|---|---|",
    ]
    totals = [0, 0, 0]
    for number in chapter_numbers()[1:]:
        path = notebook(number)
        row = [reading_minutes(path), math.ceil(seconds[number][1] / 60), exercise_minutes.get(number, 0)]
        totals = [t + r for t, r in zip(totals, row)]
        link = f"{pages_url()}/chapters/{path.stem}.html"
        lines.append(f"| [{number}]({link}) | {goals[number]} | " + " | ".join(map(str, row)) + " |")
    lines.append("| **all** | | " + " | ".join(f"**{t}**" for t in totals) + " |")
    return "\n".join(lines) + "\n"


def rewrite_start_page() -> bool:
    """Replace the table of the start page's "## Your time" cell with :func:`start_page_table`; True if it changed.

    Raises:
        ValueError: the start page has no "## Your time" cell with a table.
    """
    book = json.loads(START.read_text())
    for cell in book["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and text.startswith("## Your time"):
            table = re.search(r"^\| chapter \|.*?\n(?=\n|\Z)", text, re.M | re.S)
            if table is None:
                raise ValueError("the start page's '## Your time' cell has no table")
            new = text[: table.start()] + start_page_table() + text[table.end() :]
            if new == text:
                return False
            cell["source"] = new.splitlines(keepends=True)
            START.write_text(json.dumps(book, indent=1, ensure_ascii=False) + "\n")
            return True
    raise ValueError("the start page has no markdown cell starting '## Your time'")


if __name__ == "__main__":
    print("rewrote" if rewrite_start_page() else "unchanged:", START.relative_to(ROOT))
