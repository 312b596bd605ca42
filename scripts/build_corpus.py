"""Rebuild chapter 8's natural corpus and tokenizer (lib/data/) from CPython 3.11.7's standard library.

The corpus is the source of every ``.py`` module of CPython 3.11.7's ``Lib`` directory, tests, IDLE, lib2to3,
ensurepip's bundled wheels and site-packages left out, files in sorted path order, each preceded by a line
``# file: <path>``. It ships compressed in the repository (PSF license, ``lib/data/LICENSE-PSF.txt``), so every
machine reads the same text; this script only shows how it was made and lets a test check that it still is.

Usage (needs a CPython 3.11.7 install, e.g. ``pyenv install 3.11.7``)::

    python scripts/build_corpus.py [--lib PATH_TO_Lib] [--check]

``--check`` rebuilds in memory and compares with the shipped files instead of writing them.
"""

from __future__ import annotations

import argparse
import lzma
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.induction.natural import corpus  # noqa: E402

VERSION = (3, 11, 7)
SKIP_DIRS = {"test", "tests", "idlelib", "lib2to3", "site-packages", "ensurepip", "__pycache__", "turtledemo"}


def corpus_text(lib: Path) -> str:
    """The corpus: every kept module's source, sorted by path, each after a ``# file:`` line."""
    files = sorted(
        p for p in lib.rglob("*.py") if not SKIP_DIRS.intersection(p.relative_to(lib).parts[:-1]) and p.is_file()
    )
    parts = []
    for path in files:
        source = path.read_text(encoding="utf-8").replace("\r\n", "\n")
        parts.append(f"# file: {path.relative_to(lib).as_posix()}\n{source.rstrip()}\n")
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", type=Path, default=Path(argparse.__file__).parent, help="CPython 3.11.7's Lib")
    parser.add_argument("--check", action="store_true", help="compare with lib/data instead of writing")
    args = parser.parse_args()
    if args.lib == Path(argparse.__file__).parent and sys.version_info[:3] != VERSION:
        raise SystemExit(f"run with CPython {'.'.join(map(str, VERSION))} or pass --lib; this is {sys.version}")
    text = corpus_text(args.lib)
    tokenizer = corpus.train_tokenizer(corpus.split_files(text)[0])
    if args.check:
        same_text = corpus.sha256(text) == corpus.CORPUS_SHA256
        same_tok = corpus.sha256(tokenizer.to_str()) == corpus.sha256(corpus.TOKENIZER_PATH.read_text())
        print(f"corpus {'matches' if same_text else 'DIFFERS'}; tokenizer {'matches' if same_tok else 'DIFFERS'}")
        raise SystemExit(0 if same_text and same_tok else 1)
    corpus.CORPUS_PATH.parent.mkdir(parents=True, exist_ok=True)
    corpus.CORPUS_PATH.write_bytes(lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    corpus.TOKENIZER_PATH.write_text(tokenizer.to_str(pretty=False))
    license_file = args.lib.parent.parent / "LICENSE.txt" if not (args.lib / "LICENSE.txt").exists() else None
    source_license = args.lib / "LICENSE.txt" if license_file is None else license_file
    corpus.LICENSE_PATH.write_text(source_license.read_text())
    print(f"wrote {corpus.CORPUS_PATH} ({len(text):,} characters, sha256 {corpus.sha256(text)})")


if __name__ == "__main__":
    main()
