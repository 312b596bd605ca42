"""Fail unless _config.yml's repository.url is the given address (the publishing workflow passes its own).

The setup cell of every chapter installs `lib` from that address, so a fork that publishes the book must change
it first: `python3 scripts/check_repository_url.py https://github.com/OWNER/NAME`.

:func:`pages_url` derives the published book's address from it (GitHub Pages: ``https://OWNER.github.io/NAME``);
the chapters link the book's other pages there, because a relative link to a ``.md`` or ``.ipynb`` file does not
open in Colab or in the learner edition (tests/book/test_hygiene.py checks both).
"""

import re
import sys
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / "_config.yml"


def configured_url() -> str:
    """The ``url:`` under ``repository:`` in _config.yml (read as text: the workflow runs before any install)."""
    match = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", CONFIG.read_text(), re.MULTILINE)
    if not match:
        raise SystemExit(f"{CONFIG.name} has no repository.url")
    return match.group(1)


def owner_and_name(repository: str) -> tuple[str, str]:
    """``https://github.com/OWNER/NAME`` (a final ``.git`` or ``/`` allowed) -> ``(OWNER, NAME)``.

    Raises:
        ValueError: not a GitHub repository address.
    """
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?", repository.strip())
    if not match:
        raise ValueError(f"repository must be a GitHub address https://github.com/OWNER/NAME, got {repository!r}")
    owner, name = match.groups()
    return owner, name


def pages_url(repository: str | None = None) -> str:
    """The GitHub Pages address of the book published from ``repository`` (default: _config.yml's), no final slash.

    ``https://github.com/OWNER/NAME`` -> ``https://OWNER.github.io/NAME``; a page ``chapters/x.md`` or
    ``chapters/x.ipynb`` of the book is then ``{pages_url()}/chapters/x.html``.
    """
    try:
        owner, name = owner_and_name(repository or configured_url())
    except ValueError as error:
        raise SystemExit(str(error)) from None
    return f"https://{owner.lower()}.github.io/{name}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    expected, found = argv[0].rstrip("/"), configured_url().rstrip("/")
    if found.lower() != expected.lower():
        print(
            f"_config.yml's repository.url is {found}, but this repository is {expected}: set repository.url to "
            f"{expected} (the chapters' setup cells install lib from it)",
            file=sys.stderr,
        )
        return 1
    print(f"repository.url matches {expected}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
