"""Build the larger code corpus for the natural-text runs on a GPU (issue 29): the Python source of permissively
licensed packages, from their wheels on the package index, pinned by version and by each wheel's SHA-256.

Every ``.py`` file of each wheel is kept except tests (``tests/``, ``test/``, ``testing/`` folders and ``test_*.py``),
vendored copies of other projects (``_vendor``, ``vendored``, ``externals``) and files that are not UTF-8; files whose
text another package already contributed are dropped (the first, in :data:`PACKAGES` order, is kept). Whole packages are
held out for evaluation (:data:`HELD_OUT`). Each file is written after a line ``# file: <package>/<path>``, in sorted
order; every wheel's license files are kept beside the text.

Output (``--out``, default ``_build/code-corpus``): ``train.txt``, ``heldout.txt``, ``manifest.json`` (per file:
package, path, SHA-256, bytes, split) and ``licenses/<package>/...``. With ``--tokenizer``, also ``bpe<vocab>.json``: a
byte-level BPE of ``--vocab`` tokens (default 4,096) trained on ``train.txt`` alone (chapter 8's recipe).

Usage: ``.venv/bin/python scripts/build_code_corpus.py [--out DIR] [--wheels DIR] [--tokenizer]``. Downloads about
150 MB of wheels once (kept in ``--wheels``); a wheel whose SHA-256 is not the pinned one stops the build.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PACKAGES: dict[str, tuple[str, str, str]] = {
    # name: (version, SPDX license, SHA-256 of the wheel for CPython 3.12 on manylinux x86-64 or any platform)
    "numpy": ("2.5.5", "BSD-3-Clause", "704d819265e5d1064d932968e9ee85fff2103ccc78c05b878c06943ba27b8507"),
    "scipy": ("1.18.1", "BSD-3-Clause", "f55fa87b6c612ecd6b058f167c53231b1d14e412efe361d3d6e38b3631c73218"),
    "sympy": ("1.14.0", "BSD-3-Clause", "e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5"),
    "networkx": ("3.7", "BSD-3-Clause", "e3fd2c13a7814cee3746340d8d7f8598a67f16a58bf47fb7f8793fab6efca1b0"),
    "pandas": ("3.1.1", "BSD-3-Clause", "028490c8ac2e03e18c9b08b7f3612e149b03570209bcf741d23833a7a5377ab2"),
    "scikit-learn": ("1.9.1", "BSD-3-Clause", "e5d7b18a5b9dca241a74695f3275fa4c895a9dadc72b3d8df5fa9d1083c9b83e"),
    "statsmodels": ("0.15.0", "BSD-3-Clause", "c6f2bd48915cc9b3b95c3c7f6ac363b6f8aaa38172962ba5f7f6885f0dfe57f2"),
    "astropy": ("8.0.2", "BSD-3-Clause", "000d6998bcf4f097257b3776f29f1dafde0967bf1b091edbad95df564eee4eea"),
    "xarray": ("2026.9.0", "Apache-2.0", "fe349fa871628b1a0a5217af3fe1283a2862d5485156e6eda354fffb81c3bb7c"),
    "dask": ("2026.8.0", "BSD-3-Clause", "ccc0c83a189b0398602435189771d28dad7b5773b6089bb8dce14ae732dd782c"),
    "django": ("6.1.3", "BSD-3-Clause", "a0530e3fdac55d34ccc5893c36f6c57d7a7083064f3d414537e51473648b3290"),
    "sqlalchemy": ("2.1.9", "MIT", "fcff5267a11d865efaff9ffc37ba3c8eab775bb4f4880a957c13dd7e63df5469"),
    "twisted": ("26.10.0", "MIT", "3732f42af218925a0fe78d6668db55853f7fb532245a89a2669babe7d3000fa8"),
    "tornado": ("6.6.1", "Apache-2.0", "1b6ff57cc69b339f8feb9e7b567b0e0eacb16bfaf234159496623ef7a67ba640"),
    "setuptools": ("84.2.1", "MIT", "ca140b45d5325a9478f880e351484f62fef15f336462e449ca0c03c873d589c2"),
    "sphinx": ("9.1.1", "BSD-2-Clause", "f8b60013ce25017be41a509e5c2d265bc1918410061315c36b809c7f335646c0"),
    "pygments": ("2.21.0", "BSD-2-Clause", "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9"),
    "flask": ("3.1.3", "BSD-3-Clause", "f4bcbefc124291925f1a26446da31a5178f9483862233b23c0c96a20701f670c"),
    "jinja2": ("3.1.6", "BSD-3-Clause", "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67"),
}
"""The packages, in the order their files are deduplicated (``--pin`` prints the SHA-256 of new wheels)."""
HELD_OUT = ("pygments", "flask", "jinja2")
"""Packages held out whole: evaluation text whose code the model never saw, in styles it saw (a lexer library, a web
framework and its template engine)."""
SKIP_PARTS = frozenset({"tests", "test", "testing", "_vendor", "vendored", "externals", "__pycache__"})
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64")
PLATFORMS += ("manylinux2014_x86_64", "manylinux1_x86_64")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wheel_of(name: str, wheels: Path) -> Path:
    """The downloaded wheel of ``name`` at its pinned version (downloading it when missing)."""
    version = PACKAGES[name][0]
    stem = name.replace("-", "_").lower()
    found = [p for p in wheels.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        command = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
        command += ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", "-d", str(wheels)]
        for platform in PLATFORMS:
            command += ["--platform", platform]
        subprocess.run(command + [f"{name}=={version}"], check=True)
        found = [p for p in wheels.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if len(found) != 1:
        raise SystemExit(f"expected one wheel of {name}=={version} in {wheels}, found {[p.name for p in found]}")
    return found[0]


def kept(path: str) -> bool:
    """Whether a wheel member is corpus source: a ``.py`` file outside tests and vendored code."""
    parts = path.split("/")
    return path.endswith(".py") and not SKIP_PARTS.intersection(parts[:-1]) and not parts[-1].startswith("test_")


def is_license(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].upper()
    return ".dist-info/" in path and name.startswith(("LICENSE", "COPYING", "NOTICE", "AUTHORS"))


def build(out: Path, wheels: Path, pin: bool) -> dict[str, str]:
    """Write the corpus into ``out``; return the wheels' SHA-256 by package (checked against the pins, unless
    ``pin``)."""
    wheels.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    texts: dict[str, list[str]] = {"train": [], "heldout": []}
    manifest, digests = [], {}
    for name, (_version, license_id, pinned) in PACKAGES.items():
        wheel = wheel_of(name, wheels)
        digests[name] = digest = sha256(wheel.read_bytes())
        if not pin and digest != pinned:
            raise SystemExit(f"{wheel.name}: SHA-256 {digest}, pinned {pinned or '(none: run with --pin)'}")
        split = "heldout" if name in HELD_OUT else "train"
        with zipfile.ZipFile(wheel) as archive:
            for member in sorted(archive.namelist()):
                data = archive.read(member)
                if is_license(member):
                    target = out / "licenses" / name / member.rsplit("/", 1)[-1]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                if not kept(member):
                    continue
                try:
                    text = data.decode("utf-8").replace("\r\n", "\n").rstrip()
                except UnicodeDecodeError:
                    continue
                key = sha256(text.encode())
                if not text or key in seen:
                    continue
                seen.add(key)
                texts[split].append(f"# file: {name}/{member}\n{text}\n")
                manifest.append(
                    {
                        "package": name,
                        "license": license_id,
                        "path": member,
                        "sha256": key,
                        "bytes": len(text),
                        "split": split,
                    }
                )
    for split, parts in texts.items():
        (out / f"{split}.txt").write_text("\n".join(parts), encoding="utf-8")
    summary = {
        split: {
            "files": len(parts),
            "bytes": sum(len(p.encode()) for p in parts),
            "sha256": sha256("\n".join(parts).encode()),
        }
        for split, parts in texts.items()
    }
    (out / "manifest.json").write_text(json.dumps({"summary": summary, "wheels": digests, "files": manifest}, indent=1))
    for split, numbers in summary.items():
        print(f"{split}: {numbers['files']} files, {numbers['bytes'] / 1e6:.1f} MB, sha256 {numbers['sha256']}")
    return digests


def train_tokenizer(out: Path, vocab: int) -> None:
    """A byte-level BPE of ``vocab`` tokens on ``train.txt``, BOS first (the recipe of chapter 8's tokenizer)."""
    sys.path.insert(0, str(ROOT))
    from lib.induction.natural import corpus

    text = (out / "train.txt").read_text(encoding="utf-8")
    tokenizer = corpus.train_tokenizer(text, vocab=vocab)
    (out / f"bpe{vocab}.json").write_text(tokenizer.to_str(pretty=False))
    print(f"tokenizer: {tokenizer.get_vocab_size()} tokens in {out / f'bpe{vocab}.json'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "code-corpus")
    parser.add_argument("--wheels", type=Path, default=ROOT / "_build" / "code-corpus-wheels")
    parser.add_argument("--pin", action="store_true", help="print the wheels' SHA-256 instead of checking them")
    parser.add_argument("--tokenizer", action="store_true", help="also train the BPE tokenizer on train.txt")
    parser.add_argument("--vocab", type=int, default=4096)
    args = parser.parse_args(argv)
    digests = build(args.out, args.wheels, args.pin)
    if args.pin:
        print(json.dumps(digests, indent=1))
    if args.tokenizer:
        train_tokenizer(args.out, args.vocab)


if __name__ == "__main__":
    main()
