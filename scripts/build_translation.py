"""Build the book in another language (issue 42) into ``_build/html/LANG/``, from the English pages and their
translations (``scripts/translations.py``), without executing anything a second time.

``make book`` runs it after the English build: each chapter's outputs come from the English build's Jupyter cache
(``_build/.jupyter_cache``), its prose, captions and alt text from ``translations/LANG/``. A page whose translation
is not complete yet goes in English, under a note that says so. The source tree is written to
``_build/LANG-src/`` (``_config.yml`` with the translated title, ``language``, execution off and a language switch
back to the English pages; ``_toc.yml`` with the translated captions and sidebar titles), then built strictly
(``-W -n --keep-going``) as the English book is.

Usage: ``python scripts/build_translation.py ko``
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import make_learner
import yaml

import translations

ROOT = translations.ROOT
BUILD = ROOT / "_build"
CACHE = BUILD / ".jupyter_cache"
COPIED = ["_ext", "_static", "references.bib", "chapters/performance_figures", "scripts/check_repository_url.py"]
"""What the book's pages need besides themselves: extensions (and the script one imports), static files, the
bibliography, figure files."""

NOT_YET = {
    "ko": "```{note}\n이 페이지는 아직 번역되지 않아 영어 원문으로 싣는다. 번역은 진행 중이다.\n```",
}
"""The note above a page whose translation is not complete yet, in each language."""

SWITCH_BACK = {"ko": {"label": "English", "root": "../", "lang": "en"}}


def executed(page: Path) -> dict:
    """The notebook ``page`` with the outputs of the English build (its Jupyter cache), as parsed JSON.

    Raises:
        ValueError: the cache holds no execution of this notebook as it is now (build the English book first).
    """
    import nbformat
    from jupyter_cache import get_cache

    notebook = nbformat.read(page, as_version=4)
    try:
        _, merged = get_cache(CACHE).merge_match_into_notebook(notebook)
    except KeyError as missing:
        raise ValueError(
            f"{page.name}: no execution of it in {CACHE}: run `make book` (the English build)"
        ) from missing
    return json.loads(nbformat.writes(merged))


def with_note(page: Path, lang: str) -> str | dict:
    """The English page ``page`` (a notebook with outputs, or Markdown text) with the not-yet-translated note after
    its title."""
    note = NOT_YET[lang]
    if page.suffix == ".ipynb":
        notebook = executed(page)
        first = notebook["cells"][0]
        title, _, rest = "".join(first["source"]).partition("\n")
        first["source"] = f"{title}\n\n{note}\n{rest}"
        return notebook
    title, _, rest = page.read_text().partition("\n")
    return f"{title}\n\n{note}\n{rest}"


def page_in(page: Path, lang: str) -> tuple[str | dict, bool]:
    """The page in ``lang`` (notebook JSON or Markdown text) and whether it is translated (else English + note)."""
    translated = translations.load(page, lang)
    if not translated or translations.problems(page, lang, translated):
        return with_note(page, lang), False
    if page.suffix == ".ipynb":
        return translations.translated_notebook(executed(page), translated, translations.labels(lang)), True
    return translations.translated_markdown(page, translated), True


def write_source(lang: str, source: Path) -> list[str]:
    """Write the translated book's source tree to ``source``; returns the names of the pages still in English."""
    if source.exists():
        shutil.rmtree(source)
    source.mkdir(parents=True)
    for name in COPIED:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name)
        else:
            shutil.copy2(ROOT / name, source / name)
    toc = ROOT / "_toc.yml"
    title, toc_data = translations.translated_toc(toc, translations.load(toc, lang))
    (source / "_toc.yml").write_text(yaml.safe_dump(toc_data, allow_unicode=True, sort_keys=False))
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["title"] = title
    config["execute"]["execute_notebooks"] = "off"
    config["sphinx"]["config"]["language"] = lang
    config["sphinx"]["config"]["language_switch"] = SWITCH_BACK[lang]
    config["sphinx"]["config"]["colab_words"] = translations.ui_words(lang, "colab")
    config["sphinx"]["config"]["colab_learner"] = {
        p.stem: f"learner/{lang}/{p.name}" for p in make_learner.translated_chapters(lang)
    }
    (source / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    english = []
    for page in translations.book_pages()[1:]:
        content, done = page_in(page, lang)
        target = source / page.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict):
            target.write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n")
        else:
            target.write_text(content)
        if not done:
            english.append(page.name)
    return english


def build(lang: str) -> Path:
    """Write ``_build/LANG-src``, build it strictly, and copy its HTML to ``_build/html/LANG``; returns that folder."""
    source = BUILD / f"{lang}-src"
    english = write_source(lang, source)
    print(f"{lang}: {len(translations.book_pages()) - 1 - len(english)} pages translated, in English: {english}")
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    subprocess.run([str(jupyter_book), "build", "--all", "-W", "-n", "--keep-going", str(source)], check=True)
    html = BUILD / "html" / lang
    if html.exists():
        shutil.rmtree(html)
    shutil.copytree(source / "_build" / "html", html)
    return html


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (translations.TRANSLATIONS / sys.argv[1]).is_dir():
        langs = sorted(p.name for p in translations.TRANSLATIONS.iterdir() if p.is_dir())
        sys.exit(f"usage: python scripts/build_translation.py LANG (one of {langs})")
    print(f"built {build(sys.argv[1])}")
