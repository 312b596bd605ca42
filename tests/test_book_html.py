"""The built book (when present): one page per toc entry, no notebook error output, and code that fits the page."""

import pytest
from book import ROOT, resolve, toc_files
from bs4 import BeautifulSoup

HTML = ROOT / "_build" / "html"
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
