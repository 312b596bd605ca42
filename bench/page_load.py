"""What a reader's browser loads for each page of the built book, and how soon it paints.

    python bench/page_load.py [HTML_DIR]   (default _build/html; run `make book` first)

Serves the built book locally and opens every page of the table of contents in headless Chromium (the browser the
built-book tests use), one after another in one browser, with an empty cache for each page. Prints per page: the
time to the first contentful paint and to the load event, the bytes transferred gzip-compressed (what a web server
such as GitHub Pages sends; scripts, styles, fonts and images included) and the largest of those files. Then each
chapter's first paint as a ratio to chapter 1's (issue 30's target: chapters 2, 5 and 7 within 1.5x). Wall times
depend on the machine; the ratios in one run are what to compare.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "book"))
from bookfiles import resolve, toc_files  # noqa: E402
from headless import CHROMIUM_FLAGS, chromium_path  # noqa: E402

PAINT = """() => {
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const nav = performance.getEntriesByType("navigation")[0];
  return [paint ? paint.startTime : null, nav.loadEventEnd];
}"""


def gzipped_size(path: Path) -> int:
    """Bytes of ``path`` compressed as a web server sends it (gzip level 6)."""
    return len(gzip.compress(path.read_bytes(), compresslevel=6))


def _note_file(fetched: list[Path], html: Path, base: str, request: Any) -> None:
    """Record the file behind a finished request of the page (its address without the query)."""
    fetched.append(html / request.url.removeprefix(base).split("?")[0])


def main(html: Path) -> None:
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    pages = [resolve(e).relative_to(ROOT).with_suffix(".html").as_posix() for e in toc_files()]
    paints: dict[str, float] = {}
    print(f"{'page':40s} {'first paint':>11s} {'load':>7s} {'gzipped':>9s}  largest file")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        for rel in pages:
            context = browser.new_context(viewport={"width": 1280, "height": 900})  # an empty cache
            page = context.new_page()
            fetched: list[Path] = []
            page.on("requestfinished", functools.partial(_note_file, fetched, html, base))
            page.goto(base + rel, wait_until="load")
            page.wait_for_timeout(200)
            paint, load = page.evaluate(PAINT)
            context.close()
            files = {p: gzipped_size(p) for p in fetched if p.is_file()}
            largest = max(files, key=files.__getitem__)
            paints[rel] = paint
            print(
                f"{rel:40s} {paint / 1000:10.2f}s {load / 1000:6.2f}s {sum(files.values()) / 1024:8.0f}K  "
                f"{largest.relative_to(html)} ({files[largest] / 1024:.0f}K)"
            )
        browser.close()
    httpd.shutdown()
    first = next((v for k, v in paints.items() if "/01_" in k), None)
    if first:
        ratios = ", ".join(f"{Path(k).stem[:2]}: {v / first:.2f}" for k, v in paints.items() if "/0" in k)
        print(f"first paint / chapter 1's: {ratios}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html")
