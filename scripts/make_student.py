"""Write the workshop hand-out: one student notebook per chapter, solutions removed, stubs kept.

Usage: ``python scripts/make_student.py [OUT_DIR]`` (``make student`` writes ``student/``).

In a chapter an exercise is: a stub cell (tag ``exercise-stub``), hints in ``{dropdown}`` blocks, a
solution cell (tag ``solution``), and a check cell. The student copy drops every solution cell, makes
the stubs runnable (drops the tags that made the book build and nbval skip them), turns MyST dropdowns
into HTML ``<details>`` (which Jupyter and Colab render collapsed) and clears every output.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP_TAGS = {"skip-execution", "nbval-skip"}
DROPDOWN = re.compile(r"^(`{3,}|:{3,})\{dropdown\}[ \t]*(.*?)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
NOTICE = (
    "> **Workshop version.** The solutions are removed: fill in every cell that raises `NotImplementedError`, "
    "then run the check below it. The full chapter, with solutions, is in the book."
)


def text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def dropdowns_to_details(markdown: str) -> str:
    """```{dropdown} Title ... ``` (or :::) -> <details><summary>Title</summary> ... </details>."""
    return DROPDOWN.sub(
        lambda m: f"<details><summary>{m.group(2) or 'Show'}</summary>\n\n{m.group(3).strip()}\n\n</details>", markdown
    )


def student_notebook(nb: dict) -> dict:
    """A copy of a chapter notebook for learners (see the module docstring)."""
    cells = []
    for cell in nb["cells"]:
        cell = json.loads(json.dumps(cell))
        if "solution" in tags(cell):
            continue
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
            kept = [t for t in tags(cell) if t not in SKIP_TAGS]
            if kept:
                cell["metadata"]["tags"] = kept
            else:
                cell.get("metadata", {}).pop("tags", None)
        elif cell["cell_type"] == "markdown":
            cell["source"] = dropdowns_to_details(text(cell))
        cells.append(cell)
    notice = {"cell_type": "markdown", "metadata": {}, "source": NOTICE}
    if any("exercise-stub" in tags(c) for c in cells):
        cells.insert(1, notice)
    out = dict(nb, cells=cells)
    if "nbformat_minor" in out and out["nbformat_minor"] >= 5:
        for i, cell in enumerate(cells):
            cell.setdefault("id", f"student-{i}")
    return out


def main(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        target = out_dir / path.name
        target.write_text(json.dumps(student_notebook(nb), indent=1, ensure_ascii=False) + "\n")
        written.append(target)
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "student"
    for p in main(out):
        print(f"wrote {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}")
