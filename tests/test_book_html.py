"""The built book (when present): one page per toc entry, and no notebook error output in any page."""

import pytest
from book import ROOT, resolve, toc_files

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
