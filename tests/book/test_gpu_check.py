"""bench/gpu_check.sh on this CPU as it runs on the GPU machine (``make gpu-check-cpu``, marker ``gpu_check``; in CI).

The GPU machine has its own Python with torch and the packages of ``bench/gpu_image_packages.txt``, and no network.
Here: a fresh virtual environment with torch and exactly those of the book's dependencies (the "image"), the wheels
``scripts/collect_gpu_wheels.py`` collects for this Python, and the script run with ``CIRCUITS_DEVICE=cpu`` on a copy of
the tree: it must install without an index and import every module of ``lib`` and run chapters. Building the image needs
the package index, as ``make colab`` does; the check itself does not.
"""

import json
import os
import subprocess
import sys

import pytest
from bookfiles import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import collect_gpu_wheels  # noqa: E402

pytestmark = pytest.mark.gpu_check

CHAPTERS = ["00_start_here", "01_ocr_data", "08_natural_text"]
"""A chapter of each part, with transformer_lens's models (the whole book runs on the GPU machine itself)."""


def clean_env(**extra: str) -> dict[str, str]:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PIP_", "CIRCUITS_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)} | extra


def test_gpu_check_runs_offline_from_carried_wheels(tmp_path):
    present = collect_gpu_wheels.present_on_target(ROOT / "bench" / "gpu_image_packages.txt")
    closure = collect_gpu_wheels.closure()
    image_part = {n: v for n, v in closure.items() if n in present}
    assert "transformer-lens" not in image_part and "numpy" in image_part
    image = tmp_path / "image"
    subprocess.run([sys._base_executable, "-m", "venv", str(image)], check=True)
    python = str(image / "bin" / "python")
    pins = ["torch==2.13.0"] + [f"{n}=={v}" for n, v in image_part.items()]
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins], check=True)
    lacking = subprocess.run([python, "-c", "import transformer_lens"], capture_output=True, env=clean_env())
    assert lacking.returncode != 0, "the image must lack what the wheels carry"

    wheels = tmp_path / "whl"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "collect_gpu_wheels.py"), "--dest", str(wheels)]
        + ["--python-version", f"{sys.version_info.major}.{sys.version_info.minor}"],
        check=True,
    )
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    tree.mkdir()
    subprocess.run(["tar", "cf", "-", "-T", "-"], cwd=ROOT, input=files.stdout.encode(), stdout=open(tree / "t", "wb"))
    subprocess.run(["tar", "xf", "t"], cwd=tree, check=True)
    env = clean_env(
        PYTHON=python,
        WHEELS=str(wheels),
        SITE=str(tmp_path / "site"),
        NAME="cpu-check",
        CIRCUITS_DEVICE="cpu",
        OMP_NUM_THREADS="1",
        BENCH_ARGS="--chapters " + " ".join(CHAPTERS) + " --only",
        PIP_NO_INDEX="1",  # belt and braces: nothing may come from an index
    )
    run = subprocess.run(
        ["bash", "bench/gpu_check.sh"], cwd=tree, env=env, capture_output=True, text=True, timeout=1200
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "modules of lib import" in run.stdout
    results = json.loads((tree / "bench" / "results" / "cpu-check.json").read_text())
    assert results["machine"]["device"] == "cpu" and not results["failed"]
    assert sorted(results["chapters"]) == sorted(CHAPTERS)
