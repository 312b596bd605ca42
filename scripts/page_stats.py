"""How each chapter page of the built book reads: its words, screens, figures per 1,000 words, tallest unfolded cell.

Usage: ``python scripts/page_stats.py [HTML_DIR]`` (default ``_build/html``; build it with ``make book``) prints a
Markdown table, measured in headless Chromium at 1280 x 800 as a reader opens the page (folded blocks closed):

- words: the prose a reader scrolls past (the article's text outside code cells and closed folds);
- screens: the article's height in 800-pixel screens;
- figures: numbered figures (static and interactive), and per 1,000 words;
- tallest cell: the tallest code cell as shown, in pixels (its code unless folded, and its printed text unless
  folded; figures aside): more than a screen (800) hides the story.

``tests/book/test_browser.py`` checks the last two on every chapter with :data:`MEASURE`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCREEN = (1280, 800)
"""The reader's window in CSS pixels (issue 40: a laptop at 1280 x 800)."""

MEASURE = """() => {
  const SCREEN = SCREEN_PX;
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const shown = (el) => !el.closest('details:not([open])') && el.offsetParent !== null;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('div.cell, details:not([open]), script, style, .headerlink').forEach((el) => el.remove());
  const words = (clone.textContent.match(/[A-Za-z0-9][\\w'\\u2019.-]*/g) || []).length;
  const figures = article.querySelectorAll('figure').length;
  let tallest = 0;
  const taller = [];
  for (const cell of article.querySelectorAll('div.cell')) {
    let height = 0;
    for (const part of cell.querySelectorAll('div.cell_input, div.cell_output pre, div.cell_output table')) {
      if (shown(part)) height += part.getBoundingClientRect().height;
    }
    tallest = Math.max(tallest, height);
    const code = cell.querySelector('div.cell_input pre');
    if (height > SCREEN) taller.push([Math.round(height), code ? code.textContent.split('\\n')[0] : '']);
  }
  return {words, figures, height: article.getBoundingClientRect().height, tallest: Math.round(tallest), taller};
}""".replace("SCREEN_PX", str(SCREEN[1]))
"""JavaScript for ``page.evaluate``: ``{words, figures, height, tallest, taller}`` of the open page; ``taller`` lists
the cells taller than a screen as ``[height, first line of code]``."""


def chapter_pages(html: Path) -> list[Path]:
    """The built chapter pages (the start page, 00, aside), in order."""
    return sorted(p for p in (html / "chapters").glob("[0-9][0-9]_*.html") if not p.name.startswith("00_"))


def measure(html: Path) -> list[dict[str, object]]:
    """One row of measures per chapter page of the book built in ``html``."""
    sys.path.insert(0, str(ROOT / "tests" / "book"))
    import tempfile

    from headless import chromium, only_local, serve

    rows = []
    with tempfile.TemporaryDirectory() as profile, serve(html) as address, chromium(Path(profile), *SCREEN) as browser:
        page = browser.new_page()
        only_local(page, address)
        for path in chapter_pages(html):
            page.goto(f"{address}/{path.relative_to(html).as_posix()}", wait_until="load")
            m = page.evaluate(MEASURE)
            rows.append(
                {
                    "chapter": path.stem,
                    "words": m["words"],
                    "screens": round(m["height"] / SCREEN[1]),
                    "figures": m["figures"],
                    "figures per 1,000 words": round(1000 * m["figures"] / max(m["words"], 1), 1),
                    "tallest cell (px)": m["tallest"],
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    html = Path((argv or sys.argv[1:] or [str(ROOT / "_build" / "html")])[0])
    if not (html / "chapters").is_dir():
        raise SystemExit(f"no built book in {html}: run `make book` first")
    sys.path.insert(0, str(ROOT))
    from lib.show.display import markdown_table

    print(markdown_table(measure(html)))


if __name__ == "__main__":
    main()
