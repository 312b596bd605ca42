"""_ext/own_pages.py: the chapters' links to the book's published pages stay inside the built book."""

import pytest
from bookfiles import ROOT, load_extension
from bs4 import BeautifulSoup

HTML = ROOT / "_build" / "html"
BASE = "https://a.github.io/b"


def test_links_to_the_published_book_become_relative():
    relative_link = load_extension("own_pages").relative_link
    assert relative_link(f"{BASE}/chapters/05_x.html", "chapters/02_y", BASE) == "05_x.html"
    assert relative_link(f"{BASE}/chapters/glossary.html#term-a", "chapters/02_y", BASE) == "glossary.html#term-a"
    assert relative_link(f"{BASE}/chapters/05_x.html", "index", BASE) == "chapters/05_x.html"
    assert relative_link("https://a.github.io/other/x.html", "chapters/02_y", BASE) is None
    assert relative_link("https://arxiv.org/abs/1", "chapters/02_y", BASE) is None


@pytest.mark.built_book
@pytest.mark.skipif(not (HTML / "index.html").is_file(), reason="book not built; run `make book`")
def test_no_page_sends_the_reader_to_the_published_book():
    """A local build (or a fork's site) keeps its reader in the book in front of them."""
    load_extension("own_pages")  # puts scripts/ on the path
    from check_repository_url import pages_url

    base = pages_url()
    leaving = {
        page.name: found
        for page in sorted(HTML.rglob("*.html"))
        if (
            found := [
                a["href"]
                for a in BeautifulSoup(page.read_text(), "html.parser").select("main a[href]")
                if a["href"].startswith(base)
            ]
        )
    }
    assert not leaving, f"links to the published book instead of the page in this build: {leaving}"
