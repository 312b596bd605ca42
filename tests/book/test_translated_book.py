"""Issue 42: the Korean edition, built by ``make book`` into ``_build/html/ko`` (scripts/build_translation.py), has
every page of the English book; each page links to its twin in the other language; a translated page is in Korean
with the English page's figures, printed numbers and no raw MyST, and an untranslated one says so."""

import re
import sys

import pytest
from bookfiles import ROOT
from bs4 import BeautifulSoup

sys.path.insert(0, str(ROOT / "scripts"))
import translations  # noqa: E402

HTML = ROOT / "_build" / "html"
KO = HTML / "ko"
NOT_YET = "이 페이지는 아직 번역되지 않아"
HANGUL = re.compile(r"[\uac00-\ud7a3]")

pytestmark = [
    pytest.mark.built_book,
    pytest.mark.skipif(not (KO / "index.html").is_file(), reason="Korean book not built; run `make book`"),
]

PAGES = [p.relative_to(ROOT).with_suffix(".html") for p in translations.book_pages()[1:]]


def soup(path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(), "html.parser")


def translation(page) -> dict[str, dict]:
    """The page's Korean units, empty unless its translation is complete and up to date."""
    source = next(p for p in translations.book_pages()[1:] if p.relative_to(ROOT).with_suffix(".html") == page)
    done = translations.load(source, "ko")
    return done if done and not translations.problems(source, "ko", done) else {}


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_every_page_has_its_korean_page_and_each_links_to_the_other(page):
    english, korean = HTML / page, KO / page
    assert korean.is_file(), f"no Korean page for {page}"
    for here, lang in [(english, "ko"), (korean, "en")]:
        (link,) = soup(here).select("p.language-switch a")
        assert link["hreflang"] == lang
        assert (here.parent / link["href"]).resolve() == (korean if lang == "ko" else english).resolve(), link["href"]
    assert soup(korean).html["lang"] == "ko"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_a_translated_page_is_korean_an_untranslated_one_says_so(page):
    main = soup(KO / page).select_one("main")
    done = translation(page)
    if done:
        assert NOT_YET not in main.get_text()
        title = next(iter(done.values()))["text"].splitlines()[0].lstrip("# ").strip()
        assert HANGUL.search(title) and main.select_one("h1").get_text().strip().startswith(title), title
    else:
        assert NOT_YET in main.get_text(), f"{page}: in English without the note that says so"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_the_korean_page_shows_the_english_pages_figures_and_printed_output(page):
    english, korean = soup(HTML / page), soup(KO / page)
    for selector in ["main img", "main figure", "main .cell_output pre"]:
        assert len(korean.select(selector)) == len(english.select(selector)), f"{page}: {selector}"
    printed = [pre.get_text() for pre in english.select("main .cell_output pre")]
    assert printed == [pre.get_text() for pre in korean.select("main .cell_output pre")], f"{page}: printed output"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_raw_myst_or_unclosed_emphasis_on_a_korean_page(page):
    """Emphasis next to Korean needs care: CommonMark does not close ``**`` after punctuation when a letter follows
    (``**규칙(rule)**은``), and the asterisks show on the page."""
    main = soup(KO / page).select_one("main")
    for code in main.select("pre, code, .cell_output"):
        code.decompose()
    text = main.get_text()
    for raw in ["{cite", "{term}", "{numref}", "{glue", "```{", ":::", "**"]:
        assert raw not in text, f"{page} shows raw MyST {raw!r}"
    stray = re.findall(r".{0,20}(?<![*\\\w])\*(?=\S).{0,20}", text)
    assert not stray, f"{page} shows asterisks that did not become emphasis: {stray[:3]}"


def test_the_korean_sidebar_and_title_are_translated():
    start = soup(KO / "chapters" / "00_start_here.html")
    title, toc = translations.translated_toc(ROOT / "_toc.yml", translations.load(ROOT / "_toc.yml", "ko"))
    sidebar = start.select_one("nav.bd-docs-nav").get_text()
    for part in toc["parts"]:
        assert part["caption"] in sidebar
    assert title in start.select_one("title").get_text()
