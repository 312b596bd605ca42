"""Headless Chromium for the built-book tests: the browser, its flags, and the built book served locally."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

# Without these flags Chromium keeps retrying network connections on this offline machine.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def chromium_path() -> str:
    """Path of Debian's chromium, installing it when missing; skips the test where that cannot be done."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            "Chromium is not installed and cannot be installed here (needs root and apt-get): "
            "install Debian's `chromium` package to run the browser test"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"could not install Chromium with {' '.join(cmd)}: {done.stderr.strip()[-300:]}")
    return shutil.which("chromium")


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free local port; yields its address (``http://127.0.0.1:PORT``)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def korean_font() -> None:
    """Make sure the machine has a font with Hangul (Debian's ``fonts-nanum``, installed when missing, as Chromium is),
    or skip: without one, Korean pages render as empty boxes."""
    if subprocess.run(["fc-list", ":lang=ko"], capture_output=True, text=True).stdout.strip():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("no font with Hangul, and none can be installed here: install Debian's `fonts-nanum`")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "fonts-nanum"]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"could not install a Korean font with {' '.join(cmd)}: {done.stderr.strip()[-300:]}")


@contextlib.contextmanager
def chromium(profile: Path, width: int, height: int) -> Iterator:
    """A headless Chromium (a playwright ``BrowserContext``) with a fresh user-data dir ``profile`` and a window of
    ``width`` x ``height`` CSS pixels; skips the test where Chromium or playwright is missing."""
    executable = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (see requirements.txt)")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": width, "height": height},
        )
        try:
            yield context
        finally:
            context.close()


def only_local(page, address: str) -> None:
    """Let ``page`` fetch from the served book at ``address`` only: the machine is offline, so requests for other
    hosts are answered at once (aborted) instead of timing out."""
    host = urlparse(address).netloc
    page.route("**/*", lambda route: route.continue_() if urlparse(route.request.url).netloc == host else route.abort())
