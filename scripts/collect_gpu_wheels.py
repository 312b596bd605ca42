"""Collect the wheels a machine without network needs to run the book's chapters and benchmarks (bench/gpu_check.sh).

The machine already has Python and torch and the packages listed in ``--present`` (default
``bench/gpu_image_packages.txt``, the GPU machine's image). This script walks the dependencies of what the chapters
need (:data:`ROOTS`) as installed in the running environment (run it with the project's ``.venv`` Python: the versions
collected are the tested ones), drops what the machine has and what the chapters never import (:data:`NOT_IMPORTED`),
and downloads the rest, one wheel each with no dependencies, for the target's Python and platform.

Usage: ``.venv/bin/python scripts/collect_gpu_wheels.py [--dest .whl] [--python-version 3.12]``
(tests/book/test_gpu_check.py collects for this machine's Python and runs the same check on its CPU).
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
ROOTS = ("transformer-lens", "ipywidgets", "plotly", "tqdm", "numpy", "matplotlib")
"""What ``lib`` needs: pyproject.toml's dependencies but torch."""
RUNNER = ("ipykernel", "nbclient", "nbformat")
"""What executes the chapters (bench/run_all.py, in a fresh kernel each)."""
NOT_IMPORTED = frozenset({"wandb", "transformers-stream-generator"})
"""transformer_lens declares these but never imports them where the book goes (wandb: its training helper; the other,
which has no wheel, nowhere): left out, with what only they need, to keep the carried wheels small.
tests/book/test_gpu_check.py runs chapters without them."""
MANYLINUX = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def present_on_target(path: Path) -> set[str]:
    """Canonical names of the packages the target machine has (one a line; ``#`` comments)."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {canonicalize_name(line) for line in lines if line}


def closure() -> dict[str, str]:
    """``{name: version}`` of every installed distribution that :data:`ROOTS` and :data:`RUNNER` need, transitively;
    torch (the target's own) and :data:`NOT_IMPORTED` (with what only they need) left out."""
    found: dict[str, str] = {}
    todo = [canonicalize_name(n) for n in ROOTS + RUNNER]
    while todo:
        name = todo.pop()
        if name in found or name == "torch" or name in NOT_IMPORTED:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as error:
            raise SystemExit(f"{name} is needed but not installed here: run this with the project's .venv") from error
        found[name] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return dict(sorted(found.items()))


def needed(present: set[str]) -> dict[str, str]:
    """The part of :func:`closure` that the target lacks."""
    return {name: version for name, version in closure().items() if name not in present}


def download(wanted: dict[str, str], dest: Path, python_version: str, platforms: tuple[str, ...]) -> None:
    """One wheel of each ``name==version`` into ``dest`` (pure Python or built for ``platforms``), no dependencies."""
    command = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
    command += ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp", "-d", str(dest)]
    for platform in platforms:
        command += ["--platform", platform]
    subprocess.run(command + [f"{n}=={v}" for n, v in wanted.items()], check=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=ROOT / ".whl", help="folder of the wheels (default .whl)")
    parser.add_argument("--present", type=Path, default=ROOT / "bench" / "gpu_image_packages.txt")
    parser.add_argument("--python-version", default="3.12", help="the target's Python (the GPU machine's: 3.12)")
    parser.add_argument("--platform", action="append", help=f"wheel platform tags (default: {', '.join(MANYLINUX)})")
    args = parser.parse_args(argv)
    wanted = needed(present_on_target(args.present))
    args.dest.mkdir(parents=True, exist_ok=True)
    download(wanted, args.dest, args.python_version, tuple(args.platform or MANYLINUX))
    size = sum(p.stat().st_size for p in args.dest.glob("*.whl"))
    print(f"{len(wanted)} wheels in {args.dest} ({size / 2**20:.1f} MiB): {' '.join(wanted)}")


if __name__ == "__main__":
    main()
