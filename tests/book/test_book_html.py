"""The built book (when present): one page per toc entry, no notebook error output, and code that fits the page."""

import re

import pytest
import yaml
from bookfiles import ROOT, load_extension, resolve, toc_files
from bs4 import BeautifulSoup

HTML = ROOT / "_build" / "html"
previews = load_extension("glossary_previews")
# Checks of `make book`'s output: `make book` runs them right after building (marker built_book).
pytestmark = [
    pytest.mark.built_book,
    pytest.mark.skipif(not (HTML / "index.html").is_file(), reason="book not built; run `make book`"),
]

ERROR_MARKERS = ("Traceback (most recent call last)", "output traceback")


def pages():
    return [HTML / resolve(entry).relative_to(ROOT).with_suffix(".html") for entry in toc_files()]


def test_one_page_per_toc_entry():
    missing = [str(p.relative_to(HTML)) for p in pages() if not p.is_file()]
    assert not missing, f"toc entries without a built page: {missing}"


def test_no_error_output_in_pages():
    for page in pages():
        text = page.read_text(encoding="utf-8")
        found = [m for m in ERROR_MARKERS if m in text]
        assert not found, f"{page.name} shows notebook error output ({found})"


# The rendered book's code column holds about 80 characters; a longer line is cut at the right edge.
CODE_COLUMN = 79


def long_lines(page, selector: str) -> list[str]:
    """Lines longer than the code column in the ``pre`` blocks under ``selector`` on a built page."""
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return [
        line
        for block in soup.select(f"{selector} pre")
        for line in block.get_text().splitlines()
        if len(line.rstrip()) > CODE_COLUMN
    ]


@pytest.mark.parametrize("selector", ["div.cell_input", "div.cell_output"], ids=["code", "printed output"])
def test_code_and_printed_output_fit_the_code_column(selector):
    too_long = {page.name: lines for page in pages() if (lines := long_lines(page, selector))}
    assert not too_long, f"lines over {CODE_COLUMN} characters (cut off on the page): {too_long}"


def soup_of(page) -> BeautifulSoup:
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def main_of(page) -> BeautifulSoup:
    soup = soup_of(page)
    return soup.select_one("main") or soup


CHAPTER_PAGES = sorted((HTML / "chapters").glob("[0-9][0-9]_*.html"))
REFERENCES = HTML / "chapters" / "references.html"
GLOSSARY = HTML / "chapters" / "glossary.html"


def test_sidebar_numbers_the_chapters_with_the_toc_titles():
    """The sidebar reads '1. Building the data' ... '8. Natural text', the titles of _toc.yml (= the chapter map's)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    titles = [entry["title"] for part in toc["parts"] if part.get("numbered") for entry in part["chapters"]]
    links = [
        a.get_text(" ", strip=True) for a in soup_of(HTML / "chapters" / "00_start_here.html").select("nav.bd-links a")
    ]
    numbered = [text for text in links if re.match(r"\d+\. ", text)]
    assert numbered == [f"{k}. {title}" for k, title in enumerate(titles, start=1)], links


def bib_urls() -> dict[str, str]:
    """Each references.bib entry's key -> its url field."""
    text = (ROOT / "references.bib").read_text()
    entries = re.findall(r"@\w+\{(\w+),(.*?)\n\}", text, flags=re.S)
    return {key: re.search(r"\burl\s*=\s*\{([^}]*)\}", body).group(1) for key, body in entries}


def test_bibliography_page_links_every_paper():
    urls = bib_urls()
    assert {"huang2025ocr", "olsson2022induction", "elhage2021framework"} <= set(urls)
    hrefs = {a["href"] for a in main_of(REFERENCES).select("a.reference.external")}
    missing = [key for key, url in urls.items() if url not in hrefs]
    assert not missing, f"entries of references.bib without their link on the References page: {missing}"


def test_citations_resolve_to_the_bibliography():
    """Every chapter cites at least one paper; each citation is a link to an entry of the References page."""
    entries = {div["id"] for div in main_of(REFERENCES).select("div.citation[id]")}
    assert len(entries) == len(bib_urls()), "the References page must list every entry of references.bib"
    for page in CHAPTER_PAGES:
        main = main_of(page)
        targets = [a["href"].split("#")[1] for a in main.select('a[href^="references.html#"]')]
        assert targets, f"{page.name} cites no paper"
        unresolved = [t for t in targets if t not in entries]
        assert not unresolved, f"{page.name}: citations pointing at no bibliography entry: {unresolved}"
        assert "{cite" not in main.get_text(), f"{page.name} shows a raw {{cite}} role"
        # the link is the whole citation, 'Huang et al. [2025]' (_ext/bibliography_style.py), not the year alone
        year_only = [
            a.get_text() for a in main.select('a[href^="references.html#"]') if a.get_text().strip("[]()").isdigit()
        ]
        assert not year_only, f"{page.name}: citations whose link is the year alone: {year_only}"


def test_glossary_terms_are_linked_from_every_chapter():
    terms = {dt["id"] for dt in main_of(GLOSSARY).select("dl.glossary dt[id]")}
    expected = ["residual stream", "qk circuit", "ov circuit", "k-composition", "nuclear norm", "frobenius norm",
                "margin", "icl score", "prefix matching", "copying score", "previous-token head", "induction head",
                "phase change", "smeared keys", "out-of-context reasoning", "factorized output-value map",
                "merged output-value map", "full ablation", "pattern-preserving ablation"]  # fmt: skip
    missing = [t for t in expected if f"term-{t.replace(' ', '-')}" not in {t.lower() for t in terms}]
    assert not missing, f"glossary lacks {missing}"
    for page in CHAPTER_PAGES:
        main = main_of(page)
        targets = [a["href"].split("#")[1] for a in main.select('a[href^="glossary.html#"]')]
        assert targets, f"{page.name} links no glossary term"
        unresolved = [t for t in targets if t not in terms]
        assert not unresolved, f"{page.name}: term links to no glossary entry: {unresolved}"
        assert "{term}" not in main.get_text(), f"{page.name} shows a raw {{term}} role"


def plain_definition(dd) -> str:
    """A glossary entry's text as its preview writes it: each typeset formula (``\\(\\|W\\|_*\\)``) as plain
    characters (``‖W‖_*``)."""
    for formula in dd.select("span.math"):
        formula.replace_with(previews.plain_math(formula.get_text().strip().removeprefix("\\(").removesuffix("\\)")))
    return " ".join(dd.get_text().split())


def test_glossary_links_preview_their_definition():
    """Hovering a term shows the start of its definition (_ext/glossary_previews.py: the link's title)."""
    definitions = {
        dt["id"]: plain_definition(dt.find_next_sibling("dd"))[:40]
        for dt in main_of(GLOSSARY).select("dl.glossary dt[id]")
    }
    for page in CHAPTER_PAGES:
        links = main_of(page).select('a[href^="glossary.html#"]')
        bare = [a["href"] for a in links if not a.get("title")]
        assert not bare, f"{page.name}: glossary links without a preview: {bare[:3]}"
        for a in links:
            start = a["title"][:12]
            assert start and start.split()[0] in definitions[a["href"].split("#")[1]], (page.name, a["href"], start)


def test_performance_page_shows_the_bench_figures_and_grouped_tables():
    main = main_of(HTML / "chapters" / "performance.html")
    sources = [img["src"] for img in main.select("img")]
    assert any("chapter_times" in s for s in sources) and any("time_to_phase_change" in s for s in sources), sources
    assert all((HTML / "chapters" / s).resolve().is_file() for s in sources), "a figure of the page is missing"
    headings = [h.get_text(" ", strip=True).rstrip("#").strip() for h in main.select("h2, h3")]
    assert "Chapters" in headings and "Training benchmarks" in headings, headings


# Figures are made at most 6.9 inches wide (lib.show._common.MAX_WIDTH, the ~690-px column at 100 dpi) plus the
# crop's padding: shown at their own size, never shrunk, so their text keeps its 10 points or more.
MAX_FIGURE_PX = 700


def png_width(path) -> int:
    """Pixel width of a PNG file, from its header."""
    return int.from_bytes(path.read_bytes()[16:20], "big")


def shown_width(img, pixels: int) -> int:
    """The CSS width an ``<img>`` is shown at: docutils writes an image's width as ``style="width: 345px"`` (a retina
    PNG's, from its output metadata), else the PNG shows at its own pixels."""
    found = re.search(r"width:\s*([0-9.]+)px", img.get("style", "")) or re.fullmatch(r"([0-9.]+)", img.get("width", ""))
    return round(float(found.group(1))) if found else pixels


def chapter_figures() -> list[tuple[str, int, int]]:
    """(page: file, width shown on the page in CSS px, the PNG's own width in px) of every chapter figure."""
    found = []
    for page in CHAPTER_PAGES:
        for img in main_of(page).select("div.cell_output img"):
            if img["src"].endswith(".png"):
                pixels = png_width((page.parent / img["src"]).resolve())
                found.append((f"{page.name}: {img['src']}", shown_width(img, pixels), pixels))
    return found


def test_figures_fit_the_page_column():
    figures = chapter_figures()
    assert figures, "no figures found"
    too_wide = {name: shown for name, shown, _ in figures if shown > MAX_FIGURE_PX}
    assert not too_wide, f"figures wider than {MAX_FIGURE_PX} px on the page: {too_wide}"


def test_figures_are_sharp_on_high_resolution_screens():
    """Each PNG holds twice the pixels it is shown at (lib.show._common.sharp_notebook_figures)."""
    blurry = {name: (shown, pixels) for name, shown, pixels in chapter_figures() if pixels < 2 * shown - 2}
    assert not blurry, f"figures with fewer than 2 pixels per CSS pixel, (shown, pixels): {blurry}"


def test_no_script_or_stylesheet_from_another_site():
    """The book promises to work offline: every script and stylesheet a page loads is the book's own (an ipywidgets
    explorer, which would pull its viewer from a CDN, is left out of the rendered book: tag remove-cell)."""
    remote = {
        page.name: found
        for page in pages()
        if (
            found := [
                tag.get("src") or tag.get("href")
                for tag in soup_of(page).select("script[src], link[rel=stylesheet][href]")
                if re.match(r"(https?:)?//", tag.get("src") or tag.get("href"))
            ]
        )
    }
    assert not remote, f"pages loading from another site: {remote}"


def test_plotly_loads_deferred_and_every_page_has_its_favicon():
    """plotly.js (4.8 MB) must not hold back the first paint; every page names a favicon the book carries."""
    for page in pages():
        soup = soup_of(page)
        for script in soup.select("script[src]"):
            if "plotly" in script["src"]:
                assert script.has_attr("defer"), f"{page.name}: plotly.js loads before the page paints"
        icon = soup.select_one("link[rel~=icon]")
        assert icon is not None, f"{page.name}: no favicon"
        assert (page.parent / icon["href"]).resolve().is_file(), f"{page.name}: favicon {icon['href']} missing"


def test_headings_are_numbered_two_levels_deep():
    """ "1.1.1. Exercise 1.1" read as a double number: chapters and sections are numbered, nothing below."""
    deep = {
        page.name: found
        for page in pages()
        if (found := [s.get_text() for s in soup_of(page).select("span.section-number") if s.get_text().count(".") > 2])
    }
    assert not deep, f"headings numbered three levels deep: {deep}"


def test_solutions_say_so_and_the_setup_cell_is_left_out():
    for page in pages():
        text = page.read_text(encoding="utf-8")
        assert "Show code cell source" not in text, f"{page.name}: a toggle that does not say it opens a solution"
        assert "REPOSITORY = " not in text, f"{page.name}: the setup cell is on the page"


PLAIN_CHAPTER = re.compile(r"\b[Cc]hapters? (\d)(?![\d.]\d|\d)")


def plain_chapter_mentions(page) -> list[str]:
    """'chapter N' in a page's own text (not in a link, code or printed output) where N is another chapter."""
    own = page.name[:2]
    main = main_of(page)
    for skipped in main.select("a, code, pre, .cell_output, .headerlink, .citation"):  # a bibliography note: text
        skipped.decompose()
    return [m.group(0) for m in PLAIN_CHAPTER.finditer(main.get_text(" ")) if f"0{m.group(1)}" != own]


def test_chapter_mentions_are_links():
    """'chapter 5' is written as a link to chapter 5 ([chapter 5](05_induction_heads.ipynb)) wherever it names
    another chapter of the book."""
    plain = {page.name: found for page in pages() if (found := plain_chapter_mentions(page))}
    assert not plain, f"plain-text chapter mentions (make them links to the chapter): {plain}"


def test_every_figure_is_numbered_and_captioned_with_alt_text():
    """Each figure a chapter draws sits in a numbered figure with a caption (cell metadata mystnb.figure), and its alt
    text says what it shows (mystnb.image.alt), not a file name."""
    bare, no_alt = [], []
    for page in CHAPTER_PAGES:
        for img in main_of(page).select("div.cell_output img"):
            figure = img.find_parent("figure")
            if figure is None or not figure.select_one("figcaption .caption-number"):
                bare.append(f"{page.name}: {img['src']}")
            alt = img.get("alt", "")
            if len(alt) < 20 or alt.endswith(".png"):
                no_alt.append(f"{page.name}: {img['src']} ({alt!r})")
    assert not bare, f"figures without a numbered caption: {bare}"
    assert not no_alt, f"figures without alt text: {no_alt}"


def test_one_search_box():
    """One search field in the sidebar and the article header's search button (shown only where the sidebar is folded
    away), and no second field in a top bar (_ext/page_chrome.py)."""
    for page in pages():
        soup = soup_of(page)
        assert len(soup.select(".bd-sidebar-primary .search-button-field")) == 1, f"{page.name}: no sidebar search"
        assert soup.select(".bd-header-article button.search-button"), f"{page.name}: no search button"
        assert not soup.select(".bd-header .search-button-field"), f"{page.name}: a second search box in the top bar"


def test_no_page_loads_the_icon_script():
    """The theme's stylesheet draws icons from web fonts: its 1.5-MB fontawesome.js is left out (page_chrome)."""
    loading = [page.name for page in pages() if soup_of(page).select('script[src*="fontawesome"]')]
    assert not loading, f"pages that load fontawesome.js: {loading}"
    assert soup_of(pages()[1]).select("i.fab, i.fas, i.fa-solid"), "no icon on the page"


def test_mathjax_only_on_pages_with_math():
    """A page loads MathJax exactly when its own text has math (_ext/page_chrome.py)."""
    for page in pages():
        soup = soup_of(page)
        has_math = bool(soup.select("main .math"))
        loads = any("mathjax" in script.get("src", "") for script in soup.select("script"))
        assert loads == has_math, f"{page.name}: math on the page {has_math}, MathJax loaded {loads}"


def test_reference_labels_read_like_the_citations():
    """The References page labels 'Huang et al., 2025' (_ext/bibliography_style.py), not pybtex's '[HZG+25]'."""
    page = HTML / "chapters" / "references.html"
    labels = [s.get_text(strip=True).strip("[]") for s in soup_of(page).select("div.citation span.label")]
    assert labels, "no bibliography entries on the References page"
    odd = [label for label in labels if not re.fullmatch(r"[^\W\d][\w\s.-]*(?: et al\.| and [\w-]+)?, \d{4}", label)]
    assert not odd, f"labels that are not author-year: {odd}"


def test_no_figure_has_overlapping_text():
    """Issue 40: every figure a chapter shows is checked, as it is drawn, for text that runs into other text
    (lib.show.text_overlap; ``make book`` switches the check on); a page shows the check's line under a figure
    where it failed."""
    from lib.show.text_overlap import MARK

    found = {page.name: main_of(page).get_text(" ").count(MARK) for page in pages()}
    assert not any(found.values()), {
        name: f"{n} figures with overlapping text (search the page for {MARK!r})" for name, n in found.items() if n
    }


def test_a_caption_that_counts_the_panels_counts_those_of_its_figure():
    """Issue 40: where a caption states how many panels its figure has ("six panels, two rows of three"), the saved
    PNG has that many (lib.show.panels: the notebook records the count of every figure it shows in its PNG; the
    docstring there gives the captions' convention: a count of panels is the total)."""
    from lib.show import panels

    wrong, unrecorded, checked = [], [], 0
    for page in CHAPTER_PAGES:
        for img in main_of(page).select("div.cell_output img"):
            figure, src = img.find_parent("figure"), img["src"]
            caption = figure.select_one("figcaption") if figure else None
            if caption is None or not src.endswith(".png"):
                continue
            stated = panels.stated_panels(caption.get_text(" ", strip=True))
            if stated is None:
                continue
            shown = panels.saved_panels((page.parent / src).resolve())
            number = caption.select_one(".caption-number")
            name = f"{page.name} {number.get_text(strip=True) if number else src}"
            if shown is None:
                unrecorded.append(name)
            elif shown != stated:
                wrong.append(f"{name}: the caption says {stated} panels, the figure has {shown}")
            checked += 1
    assert checked, "no caption states a number of panels: the check checks nothing"
    assert not unrecorded, f"figures whose PNG records no count of panels (shown without lib.show): {unrecorded}"
    assert not wrong, wrong


@pytest.mark.parametrize("page", [p for p in CHAPTER_PAGES if not p.name.startswith("00_")], ids=lambda p: p.stem)
def test_the_key_results_open_the_chapter_and_the_chapter_prints_them(page):
    """The box (lib/show/key_results.py) comes before the first code cell; each result shows its computed number
    and links its figure, numbered as on the page; and each number is also printed by the chapter."""
    main = main_of(page)
    box = main.select_one("div.admonition.key-results")
    assert box is not None, f"{page.name}: no Key results box"
    assert not box.find_all_previous("div", class_="cell"), f"{page.name}: a code cell comes before the Key results"
    printed = " ".join(o.get_text(" ") for o in main.select("div.cell_output"))
    for item in box.select("li"):
        numbers = [s.get_text() for s in item.select("span.pasted-text")]
        assert numbers, f"{page.name}: a key result without its number: {item.get_text()[:80]!r}"
        for number in numbers:
            assert number in printed, f"{page.name}: the key result {number!r} is not printed by the chapter"
        links = item.select("a[href^='#fig-']")
        assert links, f"{page.name}: a key result without its figure: {item.get_text()[:80]!r}"
        for link in links:
            figure = main.find(id=link["href"][1:])
            shown = figure.select_one(".caption-number").get_text().strip() if figure else None
            assert shown == link.get_text().strip(), (
                f"{page.name}: {link.get_text()!r} links {link['href']}, captioned {shown!r}"
            )
