"""Write the workshop hand-out: one student notebook per chapter, solutions removed, stubs kept.

Usage: ``python scripts/make_student.py [OUT_DIR]`` (``make student`` writes ``student/``).

In a chapter an exercise is: a stub cell (tag ``exercise-stub``), hints in ``{dropdown}`` blocks, a
solution cell (tag ``solution``), and a check cell. The student copy drops every solution cell, makes
the stubs runnable (drops the tags that made the book build and nbval skip them), turns MyST dropdowns
into HTML ``<details>`` (which Jupyter and Colab render collapsed), turns the book's ``{term}`` and ``{cite}``
roles into plain text (Jupyter and Colab show MyST roles raw) and clears every output.
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


TERM = re.compile(r"\{term\}`(?P<text>[^`<]*?)\s*(<[^`]*>)?`")
CITE = re.compile(r"\{cite(?::(?P<style>[tp]))?\}`(?P<keys>[^`]*)`")
BIB_ENTRY = re.compile(r"@\w+\{(?P<key>[^,\s]+),(?P<body>.*?)\n\}", re.DOTALL)


def bib_names(bib: str) -> dict[str, tuple[str, str]]:
    """key -> (short author list, year) for every entry of a BibTeX file: ('Huang et al.', '2025')."""
    names = {}
    for entry in BIB_ENTRY.finditer(bib):
        fields = dict(re.findall(r"(\w+)\s*=\s*\{((?:[^{}]|\{[^{}]*\})*)\}", entry["body"]))
        authors = [
            a.strip().replace("{", "").replace("}", "") for a in " ".join(fields["author"].split()).split(" and ")
        ]
        last = [a.split(",")[0] for a in authors]
        short = last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2 else f"{last[0]} et al."
        names[entry["key"]] = (short, fields["year"])
    return names


def roles_to_text(markdown: str, names: dict[str, tuple[str, str]]) -> str:
    """{term}`text <term>` -> text; {cite:t}`key` -> Author et al. (2025); {cite}`key` -> (Author et al. 2025)."""
    markdown = TERM.sub(lambda m: m["text"], markdown)

    def cite(m: re.Match[str]) -> str:
        refs = [names[k.strip()] for k in m["keys"].split(",")]
        if m["style"] == "t":
            return "; ".join(f"{who} ({year})" for who, year in refs)
        return "(" + "; ".join(f"{who} {year}" for who, year in refs) + ")"

    return CITE.sub(cite, markdown)


def dropdowns_to_details(markdown: str) -> str:
    """```{dropdown} Title ... ``` (or :::) -> <details><summary>Title</summary> ... </details>."""
    return DROPDOWN.sub(
        lambda m: f"<details><summary>{m.group(2) or 'Show'}</summary>\n\n{m.group(3).strip()}\n\n</details>", markdown
    )


def student_notebook(nb: dict, names: dict[str, tuple[str, str]] | None = None) -> dict:
    """A copy of a chapter notebook for learners (see the module docstring); ``names`` from :func:`bib_names`."""
    names = bib_names((ROOT / "references.bib").read_text()) if names is None else names
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
            cell["source"] = roles_to_text(dropdowns_to_details(text(cell)), names)
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
