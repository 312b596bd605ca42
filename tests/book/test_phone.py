"""Every page of the built book read on a phone: a window 390 CSS pixels wide (an iPhone 12 to 15).

On each page, every solution opened: each figure is shown at its own aspect ratio (a figure squeezed to the
column's width but not its height halves its text); the page itself never scrolls sideways; a table wider than its
column scrolls inside its own box, and the box shows that it does (a fade at each edge with more table beyond it,
drawn by _static/wide-tables.js and .css). A screenshot of each page goes to ``_build/screenshots/phone/``.
Runs after ``make book``, like tests/book/test_browser.py.
"""

from __future__ import annotations

import pytest
from bookfiles import ROOT, resolve, toc_files
from headless import chromium, only_local, serve

HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots" / "phone"
PHONE = (390, 844)
"""Window of the phone, CSS pixels (width, height)."""
ASPECT_TOLERANCE = 0.02
"""Largest relative difference between a figure's shown and own aspect ratio: a figure a few hundred pixels wide is
shown at whole pixels, 1% at most of its height."""

pytestmark = [
    pytest.mark.built_book,
    pytest.mark.skipif(not (HTML / "index.html").is_file(), reason="book not built; run `make book`"),
]

PAGES = [resolve(e).relative_to(ROOT).with_suffix(".html") for e in toc_files()]

# Every solution opened, every image of the article loaded (lazy ones too): each image's shown and own size.
FIGURES = """async () => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const images = [...document.querySelectorAll("article img")];
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.decode().catch(() => null)));
  return images.map((img) => {
    const box = img.getBoundingClientRect();
    return {src: img.getAttribute("src").slice(-40), width: box.width, height: box.height,
            own_width: img.naturalWidth, own_height: img.naturalHeight};
  });
}"""

# How far the page scrolls sideways, and the innermost elements that reach past the window's right edge (those
# inside a box that scrolls or clips them do not widen the page).
SIDEWAYS = """() => {
  const width = document.documentElement.clientWidth;
  const boxed = (e) => {
    for (let up = e.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  const past = [...document.body.querySelectorAll("*")]
    .filter((e) => e.getBoundingClientRect().right > width + 1 && !boxed(e));
  const innermost = past.filter((e) => !past.some((other) => other !== e && e.contains(other)));
  return {
    overflow: document.documentElement.scrollWidth - width,
    culprits: innermost.slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join(".")}: `
      + (e.innerText || "").split("\\n")[0].slice(0, 60)),
  };
}"""

# Every table of the article wider than the element that holds it: the box that scrolls it sideways (the nearest
# ancestor with overflow-x auto or scroll, inside the article), whether that box shows its fade, and the same once
# it is scrolled to its end (the fade moves to the other edge).
WIDE_TABLES = """async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const fade = (box) => getComputedStyle(box).maskImage || getComputedStyle(box).webkitMaskImage || "none";
  const found = [];
  for (const table of document.querySelectorAll("article table")) {
    if (table.getBoundingClientRect().width <= table.parentElement.clientWidth + 1) continue;
    let box = table.parentElement;
    while (box && box.tagName !== "ARTICLE" && !["auto", "scroll"].includes(getComputedStyle(box).overflowX)) {
      box = box.parentElement;
    }
    const name = (table.innerText || "").split("\\n")[0].slice(0, 50);
    if (!box || box.tagName === "ARTICLE") { found.push({name, scrolls: false}); continue; }
    box.scrollLeft = 0;
    await frame();
    const start = {fade: fade(box), more_right: box.classList.contains("more-right"),
                   more_left: box.classList.contains("more-left")};
    box.scrollLeft = box.scrollWidth;
    await frame();
    const end = {fade: fade(box), more_right: box.classList.contains("more-right"),
                 more_left: box.classList.contains("more-left")};
    box.scrollLeft = 0;
    found.push({name, scrolls: box.scrollWidth > box.clientWidth, start, end});
  }
  return found;
}"""


@pytest.fixture(scope="module")
def server():
    with serve(HTML) as address:
        yield address


@pytest.fixture(scope="module")
def phone(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile"), *PHONE) as context:
        yield context


@pytest.fixture(scope="module")
def measured(server, phone):
    """Page -> (figures, sideways scroll, wide tables) as a phone shows it, each page opened once."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = {}
    for rel in PAGES:
        page = phone.new_page()
        only_local(page, server)
        response = page.goto(f"{server}/{rel.as_posix()}", wait_until="load")
        assert response is not None and response.ok, f"{rel}: HTTP {response.status if response else 'no response'}"
        figures = page.evaluate(FIGURES)
        page.wait_for_timeout(300)  # layout after the images decoded and the solutions opened
        found[rel] = (figures, page.evaluate(SIDEWAYS), page.evaluate(WIDE_TABLES))
        page.screenshot(path=str(SHOTS / f"{rel.stem}.png"), full_page=True)
        page.close()
    return found


@pytest.mark.parametrize("rel", PAGES, ids=[p.stem for p in PAGES])
def test_figures_keep_their_aspect_ratio(rel, measured):
    figures, _, _ = measured[rel]
    broken = [f["src"] for f in figures if not f["own_width"]]
    assert not broken, f"{rel}: images that did not load: {broken}"
    squeezed = {
        f["src"]: f"shown {f['width']:.0f}x{f['height']:.0f}, own {f['own_width']}x{f['own_height']}"
        for f in figures
        if f["height"] > 0
        and abs((f["width"] / f["height"]) / (f["own_width"] / f["own_height"]) - 1) > ASPECT_TOLERANCE
    }
    assert not squeezed, f"{rel}: figures shown at another aspect ratio than their own on a phone: {squeezed}"


def test_the_phone_sees_the_books_figures(measured):
    shown = [f for figures, _, _ in measured.values() for f in figures if f["height"] > 0]
    narrowed = [f for f in shown if f["width"] < f["own_width"] / 2 - 1]  # retina PNGs: own pixels twice the width
    # The book shows over 50 figures: far fewer means the test no longer finds them, and checks nothing.
    assert len(shown) >= 20 and narrowed, f"{len(shown)} figures shown, {len(narrowed)} narrowed to the phone"


@pytest.mark.parametrize("rel", PAGES, ids=[p.stem for p in PAGES])
def test_the_page_does_not_scroll_sideways(rel, measured):
    _, sideways, _ = measured[rel]
    assert sideways["overflow"] <= 0, (
        f"{rel}: the page scrolls {sideways['overflow']} px sideways on a phone; "
        f"wider than the window: {sideways['culprits']}"
    )


@pytest.mark.parametrize("rel", PAGES, ids=[p.stem for p in PAGES])
def test_wide_tables_scroll_in_their_box_and_say_so(rel, measured):
    _, _, tables = measured[rel]
    unboxed = [t["name"] for t in tables if not t["scrolls"]]
    assert not unboxed, f"{rel}: tables wider than their column that do not scroll in a box of their own: {unboxed}"
    unmarked = {
        t["name"]: (t["start"], t["end"])
        for t in tables
        if not (
            t["start"]["more_right"]
            and not t["start"]["more_left"]
            and t["start"]["fade"] != "none"
            and t["end"]["more_left"]
            and not t["end"]["more_right"]
            and t["end"]["fade"] not in ("none", t["start"]["fade"])
        )
    }
    assert not unmarked, (
        f"{rel}: wide tables whose box does not fade at the edge with more table beyond it "
        f"((at the start, scrolled to the end) per table): {unmarked}"
    )


def test_the_phone_sees_wide_tables(measured):
    assert any(tables for _, _, tables in measured.values()), "no table wider than a phone's column: nothing checked"
