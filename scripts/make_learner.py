"""Write the learner edition: one notebook per chapter for Colab and workshops, solutions removed, stubs kept.

Usage: ``python scripts/make_learner.py [OUT_DIR]`` (``make learner`` writes ``learner/``, which is committed: Colab
opens it from GitHub, and ``tests/book/test_learner.py`` fails when it is out of date with the chapters). For each
language of ``translations/`` it also writes ``learner/LANG/`` from the chapters whose translation is complete
(``scripts/translations.py``), linking the book's pages in that language.

In a chapter an exercise is: a stub cell (tag ``exercise-stub``), hints in ``{dropdown}`` blocks, a
solution cell (tag ``solution``), and a check cell. The learner copy drops every solution cell, makes
the stubs runnable (drops the tags that made the book build and nbval skip them), turns MyST dropdowns
into HTML ``<details>`` (which Jupyter and Colab render collapsed), turns the book's ``{term}``, ``{cite}`` and
``{numref}`` roles into links to the published glossary, bibliography and figures (Jupyter and Colab show MyST roles
raw; a figure reference reads "Fig. 5.2" as on the book's page), turns the "Key results" box into a quotation whose
numbers read ``?`` (the book pastes in numbers a run computes; a learner's run prints them), opens with a
cell that says what the edition is and where the solutions are, and clears every output.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from check_repository_url import pages_url  # noqa: E402

import translations  # noqa: E402

SKIP_TAGS = {"skip-execution", "nbval-skip"}
DROPDOWN = re.compile(r"^(`{3,}|:{3,})\{dropdown\}[ \t]*(.*?)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
EXERCISES = (
    "> **Learner edition.** The solutions are removed: fill in every cell that raises `NotImplementedError`; the "
    "check below it says whether your function is right, and until it is, the cells after it use the book's "
    "version, so *Run all* never stops. The full chapter, with the solutions and every output, is the book's page "
    "[{title}]({page})."
)
NO_EXERCISES = "> **Learner edition** of the book's page [{title}]({page}): the same cells, with the outputs cleared."


def text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


TERM = re.compile(r"\{term\}`(?P<text>[^`<]*?)\s*(?:<(?P<target>[^`>]*)>)?`")
CITE = re.compile(r"\{cite(?::(?P<style>[tp]))?\}`(?P<keys>[^`]*)`")
NUMREF = re.compile(r"\{numref\}`(?P<target>[^`]*)`")
GLUE = re.compile(r"\{glue:text\}`[^`]*`")
KEY_RESULTS = re.compile(
    r"^(`{3,})\{admonition\}[ \t]*(?P<title>.*?)\n:class: key-results[ \t]*\n(?P<body>.*?)^\1[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
KEY_RESULTS_NOTE = (
    "*Each **?** is a number this chapter computes: your run prints it, and the [book's page]({page}) shows it.*"
)
ENGLISH = {
    "exercises": EXERCISES,
    "no_exercises": NO_EXERCISES,
    "key_results_note": KEY_RESULTS_NOTE,
    "figure": "Fig.",
    "unknown": "**?**",
}
"""The edition's own words in English; another language's are ``learner`` of ``translations/LANG/labels.json`` (in
Korean the unknown number is ``<b>?</b>``: CommonMark does not close ``**?**`` before a Hangul particle)."""


def own_words(lang: str | None) -> dict[str, str]:
    """The learner edition's notices and figure label in ``lang`` (``None``: English)."""
    return ENGLISH if lang is None else translations.ui_words(lang, "learner")


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


GLOSSARY = re.compile(r"^```\{glossary\}\n(.*?)^```", re.MULTILINE | re.DOTALL)


def glossary_terms(glossary: str) -> dict[str, str]:
    """lower-cased term -> the term as the glossary (``chapters/glossary.md``) writes it, for every entry."""
    block = GLOSSARY.search(glossary)
    if block is None:
        raise ValueError("the glossary has no {glossary} block")
    terms = [line.strip() for line in block.group(1).splitlines() if line.strip() and not line[0].isspace()]
    return {t.lower(): t for t in terms}


def term_anchor(term: str, terms: dict[str, str]) -> str:
    """The id Sphinx gives a glossary entry (terms match case-insensitively, the id keeps the glossary's case):
    ``"icl score"`` -> ``"term-ICL-score"``."""
    if term.lower() not in terms:
        raise ValueError(f"{term!r} is not a term of the glossary (chapters/glossary.md)")
    return "term-" + re.sub(r"[^A-Za-z0-9]+", "-", terms[term.lower()]).strip("-")


def figure_numbers(notebooks: list[Path], label: str = "Fig.") -> dict[str, tuple[str, str]]:
    """figure name -> (its number as the book prints it, the chapter's file stem), for the chapters ``notebooks``:
    ``"fig-5-induction-head"`` -> ``("Fig. 5.3", "05_induction_heads")``. The book numbers every captioned figure
    (a code cell with a ``mystnb.figure`` caption that is not removed from the page) chapter by chapter, the chapter's
    number being its file's leading digits."""
    numbers = {}
    for path in notebooks:
        chapter = int(re.match(r"\d+", path.stem).group(0))  # type: ignore[union-attr]
        shown = 0
        for cell in json.loads(path.read_text())["cells"]:
            figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            if cell["cell_type"] != "code" or not figure.get("caption"):
                continue
            if {"remove-cell", "remove-output"} & set(tags(cell)):
                continue
            shown += 1
            if figure.get("name"):
                numbers[figure["name"]] = (f"{label} {chapter}.{shown}", path.stem)
    return numbers


def roles_to_links(
    markdown: str,
    names: dict[str, tuple[str, str]],
    book: str,
    terms: dict[str, str],
    figures: dict[str, tuple[str, str]] | None = None,
) -> str:
    """{term}`text <term>` -> [text](glossary#term); {cite:t}`key` -> [Author et al. (2025)](references);
    {cite}`key` -> ([Author et al. 2025](references)); {numref}`fig-name` -> [Fig. 5.2](chapter#fig-name): links
    into the book published at ``book``; ``terms`` from :func:`glossary_terms`, ``figures`` from
    :func:`figure_numbers`."""
    glossary, references = f"{book}/chapters/glossary.html", f"{book}/chapters/references.html"
    figures = figures or {}

    def figure(m: re.Match[str]) -> str:
        target = m["target"].strip()
        if target not in figures:
            known = ", ".join(sorted(figures)[:3])
            raise ValueError(f"{{numref}} names {target!r}, which is no captioned figure's name (some are: {known})")
        label, stem = figures[target]
        return f"[{label}]({book}/chapters/{stem}.html#{target})"

    def term(m: re.Match[str]) -> str:
        target = (m["target"] or m["text"]).strip()
        return f"[{m['text']}]({glossary}#{term_anchor(target, terms)})"

    def cite(m: re.Match[str]) -> str:
        refs = [names[k.strip()] for k in m["keys"].split(",")]
        if m["style"] == "t":
            return "; ".join(f"[{who} ({year})]({references})" for who, year in refs)
        return "(" + "; ".join(f"[{who} {year}]({references})" for who, year in refs) + ")"

    return NUMREF.sub(figure, CITE.sub(cite, TERM.sub(term, markdown)))


def key_results_to_quote(markdown: str, page: str, words: dict[str, str] = ENGLISH) -> str:
    """The "Key results" admonition (class ``key-results``) -> a Markdown quotation, its glued numbers ``?`` (the
    ``words``' "unknown") and a line saying where the numbers are ("key_results_note", with the chapter's ``page``)."""

    def quote(m: re.Match[str]) -> str:
        body = GLUE.sub(words["unknown"], m["body"].strip()) + "\n\n" + words["key_results_note"].format(page=page)
        return "\n".join(f"> {line}".rstrip() for line in [f"**{m['title']}**", "", *body.splitlines()])

    return KEY_RESULTS.sub(quote, markdown)


def dropdowns_to_details(markdown: str) -> str:
    """```{dropdown} Title ... ``` (or :::) -> <details><summary>Title</summary> ... </details>."""
    return DROPDOWN.sub(
        lambda m: f"<details><summary>{m.group(2) or 'Show'}</summary>\n\n{m.group(3).strip()}\n\n</details>", markdown
    )


def learner_notebook(
    nb: dict,
    name: str,
    names: dict[str, tuple[str, str]] | None = None,
    book: str = "",
    terms: dict[str, str] | None = None,
    figures: dict[str, tuple[str, str]] | None = None,
    lang: str | None = None,
) -> dict:
    """The learner edition of chapter ``name`` (its file stem; see the module docstring); ``names`` from
    :func:`bib_names`, ``book`` the published book's address, ``terms`` from :func:`glossary_terms`, ``figures`` from
    :func:`figure_numbers` (defaults: the book's own); ``lang``: ``nb`` is in that language (its links go to the
    book's pages in it, ``book``/LANG, and the edition's notices are in it), ``None``: English."""
    words = own_words(lang)
    names = bib_names((ROOT / "references.bib").read_text()) if names is None else names
    book = (book or pages_url()) + (f"/{lang}" if lang else "")
    terms = glossary_terms((ROOT / "chapters" / "glossary.md").read_text()) if terms is None else terms
    figures = figure_numbers(chapters(), words["figure"]) if figures is None else figures
    page = f"{book}/chapters/{name}.html"
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
            markdown = key_results_to_quote(dropdowns_to_details(text(cell)), page, words)
            cell["source"] = roles_to_links(markdown, names, book, terms, figures)
        cells.append(cell)
    title = re.sub(r"^#\s*", "", text(nb["cells"][0]).splitlines()[0]).strip()
    has_exercises = any("exercise-stub" in tags(c) for c in cells)
    notice = words["exercises" if has_exercises else "no_exercises"].format(title=title, page=page)
    cells.insert(1, {"cell_type": "markdown", "metadata": {}, "source": notice})
    out = dict(nb, cells=cells)
    if "nbformat_minor" in out and out["nbformat_minor"] >= 5:
        for i, cell in enumerate(cells):
            cell.setdefault("id", f"learner-{i}")
    return out


def chapters() -> list[Path]:
    """The chapter notebooks, in order."""
    return sorted((ROOT / "chapters").glob("*.ipynb"))


def rendered(path: Path, lang: str | None = None) -> str:
    """The learner edition of the chapter at ``path`` (in ``lang``: its translation), as ``make learner`` writes it."""
    nb = json.loads(path.read_text())
    if lang is not None:
        nb = translations.translated_notebook(nb, translations.load(path, lang), translations.labels(lang))
    return json.dumps(learner_notebook(nb, path.stem, lang=lang), indent=1, ensure_ascii=False) + "\n"


def translated_chapters(lang: str) -> list[Path]:
    """The chapters whose translation into ``lang`` is complete and up to date."""
    return [p for p in chapters() if translations.load(p, lang) and not translations.problems(p, lang)]


def main(out_dir: Path) -> list[Path]:
    """Write the learner edition into ``out_dir`` and, for each language, ``out_dir/LANG``; returns the files."""
    written = []
    for lang in [None, *translations.languages()]:
        folder = out_dir / lang if lang else out_dir
        folder.mkdir(parents=True, exist_ok=True)
        for path in translated_chapters(lang) if lang else chapters():
            target = folder / path.name
            target.write_text(rendered(path, lang))
            written.append(target)
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "learner"
    for p in main(out):
        print(f"wrote {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}")
