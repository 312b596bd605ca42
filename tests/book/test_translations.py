"""Issue 42: translations live as data beside the English pages (scripts/translations.py) and cannot go stale
unnoticed: a unit whose English changed after it was translated, or English with no translation, fails here, naming
the page, the unit and the first changed words. Every translated unit follows the language's term table."""

import json
import sys

import pytest
from bookfiles import ROOT, load_extension

sys.path.insert(0, str(ROOT / "scripts"))
import translations  # noqa: E402

LANGS = sorted(p.name for p in (ROOT / "translations").iterdir() if p.is_dir())

UNTRANSLATED: dict[str, set[str]] = {"ko": set()}
"""Pages with no translation file yet (issue 42 in progress). Translating a page means taking it off this list; a
page that gains a translation file while still listed fails, and so does one missing from both."""


def notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def markdown(cell_id: str, text: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def figure(cell_id: str, caption: str, alt: str) -> dict:
    metadata = {"mystnb": {"figure": {"caption": caption, "name": "fig-x"}, "image": {"alt": alt}}}
    return {
        "cell_type": "code",
        "id": cell_id,
        "metadata": metadata,
        "source": "plot()",
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "4.2\n"}],
        "execution_count": 1,
    }


@pytest.fixture
def page(tmp_path):
    path = tmp_path / "09_demo.ipynb"
    nb = notebook([markdown("a1", "The merged model only memorizes the facts."), figure("f1", "Loss.", "Two curves.")])
    path.write_text(json.dumps(nb))
    return path


def translate_all(path):
    return {
        unit.key: {"en_sha256": translations.sha256(unit.text), "en": unit.text, "text": f"[ko] {unit.text}"}
        for unit in translations.units(path)
    }


def test_a_notebook_has_a_unit_per_markdown_cell_caption_and_alt_text(page):
    assert [(u.key, u.text) for u in translations.units(page)] == [
        ("a1", "The merged model only memorizes the facts."),
        ("f1/caption", "Loss."),
        ("f1/alt", "Two curves."),
    ]


def test_a_planted_change_to_the_english_fails_naming_the_page_the_unit_and_the_first_changed_words(page):
    done = translate_all(page)
    assert translations.problems(page, "ko", done) == []
    nb = json.loads(page.read_text())
    nb["cells"][0]["source"] = "The merged model only memorizes the training facts."
    page.write_text(json.dumps(nb))
    (line,) = translations.problems(page, "ko", done)
    assert "09_demo.ipynb [a1]" in line and "at word 7: 'training facts.'" in line, line


def test_english_without_a_translation_and_a_translation_without_its_english_both_fail(page):
    done = translate_all(page)
    done["gone"] = done.pop("f1/alt")
    lines = translations.problems(page, "ko", done)
    assert any("[f1/alt]: no ko translation of 'Two curves.'" in ln for ln in lines), lines
    assert any("[gone]: translated, but the page has no such unit" in ln for ln in lines), lines
    done["f1/alt"] = {**done["gone"], "text": None}  # a unit `todo` added and nobody filled in
    assert any("[f1/alt]: no ko translation" in ln for ln in translations.problems(page, "ko", done))


def test_the_translated_notebook_changes_prose_captions_and_alt_text_and_nothing_else(page):
    nb = json.loads(page.read_text())
    nb["cells"][1]["metadata"]["mystnb"]["code_prompt_show"] = "Show the code (12 lines)"
    out = translations.translated_notebook(nb, translate_all(page), {"Show the code ({n} lines)": "코드 보기 ({n}줄)"})
    assert out["cells"][0]["source"] == "[ko] The merged model only memorizes the facts."
    assert out["cells"][1]["metadata"]["mystnb"]["figure"] == {"caption": "[ko] Loss.", "name": "fig-x"}
    assert out["cells"][1]["metadata"]["mystnb"]["image"]["alt"] == "[ko] Two curves."
    assert out["cells"][1]["metadata"]["mystnb"]["code_prompt_show"] == "코드 보기 (12줄)"
    assert {k: v for k, v in out["cells"][1].items() if k != "metadata"} == {  # code and outputs
        k: v for k, v in nb["cells"][1].items() if k != "metadata"
    }
    with pytest.raises(ValueError, match="'f1/alt' has no translation"):
        translations.translated_notebook(nb, {k: v for k, v in translate_all(page).items() if k != "f1/alt"}, {})


def test_markdown_pages_split_at_blank_lines_keeping_fences_whole_and_glossary_entries_apart(tmp_path):
    text = (
        "# T\n\nOne.\nStill one.\n\n```python\na = 1\n\nb = 2\n```\n\n"
        "## S\n\n```{glossary}\nterm one\n  Def.\n\nterm two\n  Def.\n```\n"
    )
    path = tmp_path / "demo.md"
    path.write_text(text)
    assert [u.key for u in translations.units(path)] == ["T/0", "T/1", "T/2", "S/0", "S/1", "S/term two"]
    assert translations.units(path)[2].text == "```python\na = 1\n\nb = 2\n```"
    same = {u.key: {"en_sha256": "", "en": u.text, "text": u.text} for u in translations.units(path)}
    assert translations.translated_markdown(path, same) == text


def test_a_planted_change_to_a_translated_page_of_the_book_fails(tmp_path):
    real = ROOT / "chapters" / "references.md"
    done = translations.load(real, "ko")
    assert done and translations.problems(real, "ko", done) == []
    planted = tmp_path / real.name
    planted.write_text(real.read_text().replace("with links", "with their links", 1))
    (line,) = translations.problems(planted, "ko", done)
    assert "references.md [References/1]" in line and "at word 8: 'their links." in line, line


def test_the_first_changed_words():
    assert translations.first_changed_words("a b c d", "a b x d") == "at word 3: 'x d'"
    assert translations.first_changed_words("a b c", "a b") == "at word 3: '(deleted) c'"
    assert translations.first_changed_words("a  b", "a b") == "only whitespace changed"


@pytest.mark.parametrize("lang", LANGS)
def test_every_translation_is_up_to_date_complete_and_follows_the_term_table(lang):
    lines = []
    for page in translations.book_pages():
        if translations.translation_path(page, lang).is_file():
            lines += translations.problems(page, lang) + translations.term_problems(page, lang)
    assert not lines, "\n".join(lines) + "\n(update with `python scripts/translations.py todo LANG PAGE`, README)"


@pytest.mark.parametrize("lang", LANGS)
def test_the_pages_without_a_translation_are_the_ones_listed(lang):
    missing = {p.name for p in translations.book_pages() if not translations.translation_path(p, lang).is_file()}
    assert missing == UNTRANSLATED[lang], (
        f"newly translated (take off UNTRANSLATED): {sorted(UNTRANSLATED[lang] - missing)}; "
        f"not translated and not listed: {sorted(missing - UNTRANSLATED[lang])}"
    )


@pytest.mark.parametrize("lang", LANGS)
def test_the_term_table_names_each_english_term_once(lang):
    english = [term["en"].lower() for term in translations.terms(lang)]
    assert len(english) == len(set(english)) and all(term["text"] for term in translations.terms(lang))


def test_a_unit_that_renders_a_term_otherwise_fails(tmp_path, monkeypatch):
    page = tmp_path / "demo.md"
    page.write_text("# T\n\nThe induction head copies.\n")
    monkeypatch.setattr(translations, "TRANSLATIONS", tmp_path)
    (tmp_path / "ko").mkdir()
    unit = translations.units(page)[1]
    entry = {"en_sha256": translations.sha256(unit.text), "en": unit.text}
    table = [{"en": "induction head", "text": "인덕션 헤드"}]
    for text, fails in [
        ("유도 헤드가 복사한다.", True),
        ("인덕션 헤드가 복사한다.", False),
        ("induction head가", False),
    ]:
        (tmp_path / "ko" / "demo.json").write_text(json.dumps({"units": {"T/1": {**entry, "text": text}}}))
        assert bool(translations.term_problems(page, "ko", table)) == fails, text


def test_the_language_switch_points_at_the_same_page_of_the_other_edition():
    switch_href = load_extension("language_switch").switch_href
    assert switch_href("chapters/05_x", "ko/") == "../ko/chapters/05_x.html"
    assert switch_href("chapters/05_x", "../") == "../../chapters/05_x.html"
    assert switch_href("index", "ko/") == "ko/index.html"


@pytest.mark.parametrize("lang", LANGS)
def test_every_button_label_of_the_chapters_has_a_translation(lang):
    table = translations.labels(lang)
    assert translations.translated_label("Show the code (7 lines)", {"Show the code ({n} lines)": "{n}줄"}) == "7줄"
    for page in translations.book_pages()[1:]:
        if page.suffix == ".ipynb":
            for cell in json.loads(page.read_text())["cells"]:
                mystnb = cell.get("metadata", {}).get("mystnb", {})
                for key in ("code_prompt_show", "code_prompt_hide"):
                    if key in mystnb:
                        translations.translated_label(mystnb[key], table)  # raises on a label without a pattern
