"""Issue 42, in a browser: every page of the Korean edition (``_build/html/ko``) renders its Hangul in a real font
(not the empty boxes of a missing glyph), loads without a JavaScript error from the book's own scripts, and its
language switch leads to the English twin, whose switch leads back. Saves a screenshot of each Korean page under
``_build/screenshots/ko/``. Runs after ``make book`` (marker built_book)."""

from __future__ import annotations

import sys
from urllib.parse import urlparse

import pytest
from bookfiles import ROOT
from headless import chromium, korean_font, only_local, serve

sys.path.insert(0, str(ROOT / "scripts"))
import translations  # noqa: E402

HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots" / "ko"

pytestmark = [
    pytest.mark.built_book,
    pytest.mark.skipif(not (HTML / "ko" / "index.html").is_file(), reason="Korean book not built; run `make book`"),
]

PAGES = [p.relative_to(ROOT).with_suffix(".html") for p in translations.book_pages()[1:]]

SHOW_GLYPHS = """(() => {
  for (const [id, text] of [["glyph-a", "가"], ["glyph-b", "뷁"]]) {
    const span = document.createElement("span");
    span.id = id;
    span.style.cssText = "position:fixed;top:0;left:0;z-index:9999;background:#fff;color:#000;font-size:48px;"
      + (id === "glyph-b" ? "left:80px" : "");
    span.textContent = text;
    document.body.appendChild(span);
  }
})()"""
"""Two Hangul syllables drawn in the page's own font: with no font for Hangul both are the same missing-glyph box,
pixel for pixel."""


@pytest.fixture(scope="module")
def server():
    with serve(HTML) as address:
        yield address


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    korean_font()
    with chromium(tmp_path_factory.mktemp("chromium-profile"), 1280, 900) as context:
        yield context


@pytest.mark.parametrize("rel", PAGES, ids=[p.stem for p in PAGES])
def test_korean_page_renders_hangul_and_switches_language_both_ways(rel, server, browser):
    page = browser.new_page()
    host = urlparse(server).netloc
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    only_local(page, server)
    page.goto(f"{server}/ko/{rel}", wait_until="load")
    assert page.evaluate("document.documentElement.lang") == "ko"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{rel.stem}.png"), full_page=False)
    page.evaluate(SHOW_GLYPHS)
    ga, bwelg = (page.locator(f"#glyph-{x}").screenshot() for x in "ab")
    assert ga != bwelg, f"ko/{rel}: two different Hangul syllables drawn alike (missing-glyph boxes: no Korean font)"
    page.click("p.language-switch a")
    page.wait_for_load_state("load")
    assert urlparse(page.url).path == f"/{rel}" and urlparse(page.url).netloc == host, page.url
    assert page.evaluate("document.documentElement.lang") == "en"
    page.click("p.language-switch a")
    page.wait_for_load_state("load")
    assert urlparse(page.url).path == f"/ko/{rel}", page.url
    assert not errors, f"ko/{rel}: JavaScript errors {errors}"
    page.close()
