"""Translations of the book's prose, kept as data beside the English source (issue 42).

The English pages stay the only source of code and outputs. A translation of page ``chapters/NAME.ipynb`` (or
``.md``) into language ``LANG`` lives in ``translations/LANG/NAME.json``::

    {"page": "chapters/NAME.ipynb",
     "units": {"<unit key>": {"en_sha256": "...", "en": "<the English it translates>", "text": "<the translation>"}}}

A *unit* is one piece of prose a reader sees (:func:`units`):

- in a notebook: a markdown cell (``<cell id>``), a figure's caption (``<cell id>/caption``) and its alt text
  (``<cell id>/alt``);
- in a Markdown page: a block between blank lines (code fences kept whole), keyed by the heading it sits under and
  its place there (``Learning goals/2``), so that adding a block moves only its own section's keys.

Each entry records the English it translates, and its SHA-256, so a change to the English is found (:func:`problems`:
the page, the unit and the first changed words), and so is English with no translation. ``translations/LANG/terms.json``
is the language's term table: every translated unit whose English uses a term renders it as the table says
(:func:`term_problems`).

Usage::

    python scripts/translations.py status ko          # per page: units, translated, stale, missing
    python scripts/translations.py todo ko PAGE       # add PAGE's missing and stale units (text null) to fill in
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TRANSLATIONS = ROOT / "translations"
PAGES = ROOT / "chapters"


@dataclass(frozen=True)
class Unit:
    """One piece of a page's English prose: its key on the page and its text."""

    key: str
    text: str


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _notebook_units(path: Path) -> list[Unit]:
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        if "id" not in cell:
            raise ValueError(f"{path.name}: a cell without an id (nbformat 4.5 ids key the translations)")
        if cell["cell_type"] == "markdown":
            found.append(Unit(cell["id"], "".join(cell["source"])))
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        if "caption" in mystnb.get("figure", {}):
            found.append(Unit(f"{cell['id']}/caption", mystnb["figure"]["caption"]))
        if "alt" in mystnb.get("image", {}):
            found.append(Unit(f"{cell['id']}/alt", mystnb["image"]["alt"]))
    return found


def markdown_blocks(text: str) -> list[str]:
    """``text`` split at blank lines, a fenced block (```` ``` ```` or ``:::``) kept whole with its blank lines, except
    a ``{glossary}`` fence, whose entries are blocks of their own (its opening and closing lines join the blocks next
    to them)."""
    blocks: list[str] = []
    current: list[str] = []
    fence = None
    for line in text.splitlines():
        opener = re.match(r"^(`{3,}|:{3,})", line)
        if fence is None and opener and "{glossary}" not in line:
            fence = opener[1]
        elif fence is not None and line.strip() == fence:
            fence = None
        if not line.strip() and fence is None:
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _markdown_units(path: Path) -> list[Unit]:
    """Blocks keyed ``<heading>/<place under it>``; a glossary entry keyed ``<heading>/<its first term>``."""
    found: list[Unit] = []
    section, place, glossary = "", 0, False
    for block in markdown_blocks(path.read_text()):
        heading = re.match(r"^#+ (.+)$", block)
        if heading:
            section, place = heading[1].strip(), 0
        opens = "{glossary}" in block.splitlines()[0]
        key = f"{section}/{block.splitlines()[0]}" if glossary and not opens else f"{section}/{place}"
        found.append(Unit(key, block))
        glossary = (glossary or opens or "{glossary}" in block) and not block.endswith("```")
        place += 1
    return found


def _book_units(toc: Path) -> list[Unit]:
    """The book's own words: its title (``_config.yml``), the parts' captions and the sidebar titles (``_toc.yml``)."""
    config = yaml.safe_load((toc.parent / "_config.yml").read_text())
    found = [Unit("title", config["title"])]
    for number, part in enumerate(yaml.safe_load(toc.read_text())["parts"]):
        found.append(Unit(f"caption/{number}", part["caption"]))
        found += [Unit(f"title/{entry['file']}", entry["title"]) for entry in part["chapters"] if "title" in entry]
    return found


def units(path: Path) -> list[Unit]:
    """The English prose units of the page ``path`` (a chapter ``.ipynb``, a ``.md`` page, or ``_toc.yml`` for the
    book's title, part captions and sidebar titles), in page order.

    Raises:
        ValueError: ``path`` is none of these, or a notebook cell has no id.
    """
    if path.name == "_toc.yml":
        return _book_units(path)
    if path.suffix == ".ipynb":
        return _notebook_units(path)
    if path.suffix == ".md":
        return _markdown_units(path)
    raise ValueError(f"{path}: a page is a .ipynb or .md file, or _toc.yml")


def book_pages() -> list[Path]:
    """Every page of the English book: ``_toc.yml`` itself (the book's title and sidebar), then the files it lists."""
    toc = (ROOT / "_toc.yml").read_text()
    names = re.findall(r"^\s*(?:root|- file):\s*(\S+)", toc, re.M)
    pages = [ROOT / "_toc.yml"]
    for name in names:
        (path,) = [p for p in (ROOT / f"{name}.ipynb", ROOT / f"{name}.md") if p.is_file()]
        pages.append(path)
    return pages


def translation_path(page: Path, lang: str) -> Path:
    """``translations/LANG/<page's file stem>.json`` (``_toc.json`` for the book's title and sidebar)."""
    return TRANSLATIONS / lang / f"{page.stem}.json"


def load(page: Path, lang: str) -> dict[str, dict]:
    """The units of ``page`` translated into ``lang``: key -> {en_sha256, en, text}; empty when there is no file."""
    path = translation_path(page, lang)
    return json.loads(path.read_text())["units"] if path.is_file() else {}


def first_changed_words(old: str, new: str, words: int = 8) -> str:
    """The first words of ``new`` that differ from ``old``, with their place: "at word 12: 'the merged model ...'"."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed = " ".join(b[j1 : j1 + words]) if j2 > j1 else f"(deleted) {' '.join(a[i1 : i1 + words])}"
            return f"at word {j1 + 1}: {changed!r}"
    return "only whitespace changed"


def problems(page: Path, lang: str, translated: dict[str, dict] | None = None) -> list[str]:
    """What is wrong with ``page``'s translation into ``lang``: one line per unit that has no translation, whose
    English changed after it was translated (with the first changed words), or that no longer exists."""
    translated = load(page, lang) if translated is None else translated
    where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}"
    found, lines = units(page), []
    for unit in found:
        entry = translated.get(unit.key)
        if entry is None or not entry.get("text"):
            lines.append(f"{where} [{unit.key}]: no {lang} translation of {unit.text[:60]!r}")
        elif entry["en_sha256"] != sha256(unit.text):
            change = first_changed_words(entry["en"], unit.text)
            lines.append(f"{where} [{unit.key}]: the English changed after its {lang} translation, {change}")
    keys = {unit.key for unit in found}
    lines += [f"{where} [{key}]: translated, but the page has no such unit" for key in translated if key not in keys]
    return lines


def languages() -> list[str]:
    """The languages with a folder in ``translations/`` ("ko")."""
    return sorted(p.name for p in TRANSLATIONS.iterdir() if p.is_dir())


def ui_words(lang: str, part: str) -> dict[str, str]:
    """The words the build writes around the text in ``lang``: ``part`` of ``translations/LANG/labels.json``
    ("learner": the learner edition's notices; "colab": the Colab bar)."""
    return json.loads((TRANSLATIONS / lang / "labels.json").read_text())[part]


def labels(lang: str) -> dict[str, str]:
    """The language's button labels of folded cells: English pattern -> translation (``{n}`` a number)."""
    return json.loads((TRANSLATIONS / lang / "labels.json").read_text())["labels"]


def translated_label(label: str, table: dict[str, str]) -> str:
    """``label`` ("Show the code (12 lines)") by the first pattern of ``table`` it matches ("코드 보기 (12줄)").

    Raises:
        ValueError: no pattern matches.
    """
    for pattern, text in table.items():
        match = re.fullmatch(re.escape(pattern).replace(r"\{n\}", r"(\d+)"), label)
        if match:
            return text.replace("{n}", match[1]) if match.groups() else text
    raise ValueError(f"no translation of the button label {label!r}: add its pattern to labels.json")


def translation_of(translated: dict[str, dict], key: str, where: str = "") -> str:
    """The translated text of unit ``key``.

    Raises:
        ValueError: the unit has no translation (``where`` prefixes the message: "glossary.md: ").
    """
    entry = translated.get(key)
    if entry is None or not entry.get("text"):
        raise ValueError(f"{where}unit {key!r} has no translation")
    return entry["text"]


def translated_notebook(notebook: dict, translated: dict[str, dict], buttons: dict[str, str]) -> dict:
    """A copy of the notebook ``notebook`` (parsed JSON, executed or not) with its markdown cells, captions, alt
    text and folded cells' button labels (``buttons``: :func:`labels`) translated; code and outputs stay as they are.

    Raises:
        ValueError: a unit of the notebook has no translation (run :func:`problems` first), or a label no pattern.
    """
    out = json.loads(json.dumps(notebook))

    for cell in out["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = translation_of(translated, cell["id"])
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        if "caption" in mystnb.get("figure", {}):
            mystnb["figure"]["caption"] = translation_of(translated, f"{cell['id']}/caption")
        if "alt" in mystnb.get("image", {}):
            mystnb["image"]["alt"] = translation_of(translated, f"{cell['id']}/alt")
        for key in ("code_prompt_show", "code_prompt_hide"):
            if key in mystnb:
                mystnb[key] = translated_label(mystnb[key], buttons)
    return out


def translated_markdown(path: Path, translated: dict[str, dict]) -> str:
    """The Markdown page ``path`` with every block replaced by its translation, blocks joined by blank lines.

    Raises:
        ValueError: a block has no translation.
    """
    parts = []
    for unit in _markdown_units(path):
        parts.append(translation_of(translated, unit.key, f"{path.name}: "))
    return "\n\n".join(parts) + "\n"


def translated_toc(toc: Path, translated: dict[str, dict]) -> tuple[str, dict]:
    """The book's title and ``_toc.yml`` (parsed) in the translation: captions and sidebar titles replaced.

    Raises:
        ValueError: a unit has no translation.
    """

    data = yaml.safe_load(toc.read_text())
    for number, part in enumerate(data["parts"]):
        part["caption"] = translation_of(translated, f"caption/{number}", "_toc.yml: ")
        for entry in part["chapters"]:
            if "title" in entry:
                entry["title"] = translation_of(translated, f"title/{entry['file']}", "_toc.yml: ")
    return translation_of(translated, "title", "_toc.yml: "), data


def terms(lang: str) -> list[dict[str, str]]:
    """The language's term table: ``[{"en": "induction head", "text": "인덕션 헤드"}, ...]``."""
    return json.loads((TRANSLATIONS / lang / "terms.json").read_text())["terms"]


def term_problems(page: Path, lang: str, table: list[dict[str, str]] | None = None) -> list[str]:
    """Translated units of ``page`` whose English uses a term of the table and whose translation renders it neither
    as the table says nor as the English term itself (kept in English, as the reference notes often do)."""
    table = terms(lang) if table is None else table
    lines = []
    for key, entry in load(page, lang).items():
        for term in table:
            used = re.search(rf"\b{re.escape(term['en'])}(?:s|es)?\b", entry["en"], re.I)
            text = entry.get("text") or ""
            if used and term["text"] not in text and term["en"].lower() not in text.lower():
                lines.append(f"{page.name} [{key}]: {term['en']!r} is rendered {term['text']!r} in the term table")
    return lines


def todo(page: Path, lang: str) -> int:
    """Add ``page``'s untranslated and stale units to its translation file, text ``null`` (stale ones keep their old
    text under ``previous``); returns how many were added."""
    translated = load(page, lang)
    added = 0
    for unit in units(page):
        entry = translated.get(unit.key)
        if entry is not None and entry["en_sha256"] == sha256(unit.text) and entry.get("text"):
            continue
        previous = entry.get("text") if entry else None
        translated[unit.key] = {"en_sha256": sha256(unit.text), "en": unit.text, "text": None}
        if previous:
            translated[unit.key]["previous"] = previous
        added += 1
    path = translation_path(page, lang)
    path.parent.mkdir(parents=True, exist_ok=True)
    order = [unit.key for unit in units(page)]
    ordered = {key: translated[key] for key in sorted(translated, key=lambda k: order.index(k) if k in order else 0)}
    data = {"page": str(page.relative_to(ROOT)), "units": ordered}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return added


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "status":
        lang = argv[1]
        for page in book_pages():
            found, wrong = units(page), problems(page, lang)
            print(f"{page.name:40} {len(found):4} units, {len(found) - len(wrong):4} up to date")
        return 0
    if len(argv) == 3 and argv[0] == "todo":
        page = ROOT / argv[2]
        print(f"{todo(page, argv[1])} units to translate in {translation_path(page, argv[1]).relative_to(ROOT)}")
        return 0
    print(__doc__.split("Usage::", 1)[1])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
