"""The "open in Colab" path, simulated (marker ``colab``; ``make colab``, which .ci/run runs).

1. A Colab-like base environment, built once per machine and cached (:data:`BASE_PACKAGES`: torch preinstalled as
   Colab has it, Colab's ipywidgets major version 7, matplotlib, numpy, a Jupyter kernel).
2. A fresh virtual environment on top of it, then chapters 0 and 1 of the learner edition (``learner/``, what the
   book's Colab links open) executed in it with a stub ``google.colab``
   module, so that their setup cell takes its Colab branch: it installs ``lib`` with pip from ``git+file://`` of a
   clean commit of the working tree, in place of the GitHub address.
3. Checks: the install kept the preinstalled torch and ipywidgets 7, the chapters imported the installed ``lib`` (not
   this checkout), the second chapter's setup cell was a no-op, lib's ipywidgets explorers build with ipywidgets 7,
   chapter 1's unsolved exercises fall back to the book's version, and a setup whose install fails stops the chapter.

The install needs the package index (as in Colab); nothing else is fetched. Its time and download size are written
to ``_build/colab-simulation.json``. Set ``CIRCUITS_COLAB_BASE`` to keep the base environment somewhere else.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest
from bookfiles import ROOT, code_cells, load, source

pytestmark = pytest.mark.colab

# What a Colab runtime has before the setup cell runs (the parts the book touches), plus the notebook runner.
BASE_PACKAGES = ["torch==2.13.0", "ipywidgets==7.8.5", "matplotlib", "numpy", "ipykernel", "nbclient", "nbformat"]
CHAPTERS = ["00_start_here.ipynb", "01_ocr_data.ipynb"]
CELL_TIMEOUT = 600

STUB = """\
# The simulation's stub: Colab imports google.colab before any cell runs.
import sys
import types

sys.modules["google"] = types.ModuleType("google")
sys.modules["google.colab"] = types.ModuleType("google.colab")
assert sys.prefix == {prefix!r}, sys.prefix
"""

AFTER = """\
# The simulation's checks, after the chapter.
import importlib.metadata

import ipywidgets
import torch

import lib
from lib.show import widgets


print("lib from", lib.__file__)
print("torch", torch.__version__, "ipywidgets", ipywidgets.__version__)
assert lib.__file__.startswith(sys.prefix), "the chapter did not import the installed lib"
box = widgets.attention_explorer(torch.rand(2, 2, 2, 5, 5), [0, 10])
box = widgets.ablation_explorer(
    {"full": torch.rand(2, 3, 4)}, [0, 10], ["none", "L0H0", "L0H1"], period=2
)
box = widgets.ocr_checkpoint_explorer(
    {"factorized": {0: torch.rand(3, 4)}, "merged": {0: torch.rand(3, 4)}},
    [0, 1],
)
print("explorers built with ipywidgets", ipywidgets.__version__)
"""

RUNNER = """\
import os
import sys

import nbclient
import nbformat

nb = nbformat.read(sys.argv[1], as_version=4)
client = nbclient.NotebookClient(
    nb, timeout=int(sys.argv[3]), kernel_name="python3", resources={"metadata": {"path": os.getcwd()}}
)
try:
    client.execute()
finally:
    nbformat.write(nb, sys.argv[2])
"""


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


def python_base() -> str:
    """The interpreter the project's environment was made from (Colab's runtime is a plain interpreter too)."""
    return getattr(sys, "_base_executable", sys.executable)


def site_packages(venv: Path) -> Path:
    rel = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    return venv / rel


@pytest.fixture(scope="module")
def base() -> Path:
    """The cached Colab-like base environment (rebuilt when BASE_PACKAGES or the interpreter change)."""
    key = hashlib.sha256(json.dumps([BASE_PACKAGES, sys.version]).encode()).hexdigest()[:12]
    root = Path(os.environ.get("CIRCUITS_COLAB_BASE", Path.home() / ".cache" / "circuits-from-scratch"))
    path = root / f"colab-base-{key}"
    if not (path / ".complete").exists():
        shutil.rmtree(path, ignore_errors=True)
        run([python_base(), "-m", "venv", str(path)])
        run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", *BASE_PACKAGES])
        (path / ".complete").touch()
    return path


def fresh_runtime(base: Path, where: Path) -> Path:
    """A new virtual environment that sees the base's packages behind its own, as Colab's runtime does."""
    venv = where / "runtime"
    run([python_base(), "-m", "venv", str(venv)])
    layer = f"import site; site.addsitedir({str(site_packages(base))!r})\n"
    (site_packages(venv) / "_colab_base.pth").write_text(layer)
    return venv


def clean_commit(where: Path, pyproject: str | None = None) -> Path:
    """A git repository whose `main` is a clean commit of the working tree (tracked and unignored files)."""
    repo = where / "repo"
    files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    if pyproject is not None:
        (repo / "pyproject.toml").write_text(pyproject)
    git = ["git", "-C", str(repo), "-c", "user.name=sim", "-c", "user.email=sim@localhost"]
    run([*git, "init", "-q", "-b", "main"])
    run([*git, "add", "-A"])
    run([*git, "commit", "-q", "-m", "snapshot"])
    return repo


def colab_notebook(chapter: str, repo: Path, runtime: Path, only_setup: bool = False) -> dict:
    """The chapter's learner edition with the stub cell first, the setup cell pointed at ``repo``, and the
    simulation's checks last."""
    nb = load(ROOT / "learner" / chapter)
    setup = code_cells(nb)[0]
    text = source(setup)
    address = re.search(r'^REPOSITORY = "(.*)"$', text, re.MULTILINE)
    assert address, "the setup cell must set REPOSITORY"
    setup["source"] = text.replace(address.group(0), f'REPOSITORY = "file://{repo}"')
    cells = [setup] if only_setup else nb["cells"]
    extra = [] if only_setup else [AFTER]
    nb["cells"] = [
        {"cell_type": "code", "metadata": {}, "source": STUB.format(prefix=str(runtime))},
        *cells,
        *({"cell_type": "code", "metadata": {}, "source": s} for s in extra),
    ]
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)
        cell.pop("id", None)
    nb["nbformat_minor"] = 4
    return nb


def runtime_env(runtime: Path, work: Path) -> dict[str, str]:
    """A learner's environment in Colab: no thread settings, no PYTHONPATH to this checkout; pip reports its work
    (``work/pip-report.json``, ``work/pip.log``) and starts with an empty cache."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CIRCUITS_STRICT_CHECKS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{runtime / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_CACHE_DIR"] = str(work / "pip-cache")
    env["PIP_REPORT"] = str(work / "pip-report.json")
    env["PIP_LOG"] = str(work / "pip.log")
    env["JUPYTER_PATH"] = str(runtime / "share" / "jupyter")
    return env


def execute(nb: dict, runtime: Path, where: Path, env: dict[str, str]) -> tuple[dict, str]:
    """Run ``nb`` in a kernel of ``runtime``; returns (executed notebook, error text or '')."""
    src, out = where / "in.ipynb", where / "out.ipynb"
    src.write_text(json.dumps(nb))
    (where / "runner.py").write_text(RUNNER)
    python = str(runtime / "bin" / "python")
    # the runtime's kernel: its own python (a kernelspec elsewhere on the machine could name another)
    run([python, "-m", "ipykernel", "install", "--prefix", str(runtime), "--name", "python3"], env=env)
    done = subprocess.run(
        [python, str(where / "runner.py"), str(src), str(out), str(CELL_TIMEOUT)],
        capture_output=True,
        text=True,
        env=env,
        cwd=where,  # as in Colab (/content): not this checkout, whose lib/ would shadow the installed one
    )
    executed = json.loads(out.read_text()) if out.exists() else nb
    return executed, (done.stderr[-4000:] if done.returncode else "")


def cell_text(cell: dict) -> str:
    parts = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            parts.append(o["text"] if isinstance(o["text"], str) else "".join(o["text"]))
        elif o.get("output_type") == "error":
            parts.append(f"{o['ename']}: {o['evalue']}")
    return "".join(parts)


SIZE = re.compile(r"(?:Downloading|Using cached) (\S+) \(([\d.]+) (kB|MB|GB)\)")


def download_bytes(report: Path, log: Path) -> tuple[int, list[str]]:
    """Bytes of the files pip fetched for the install (its log's "Downloading URL (size)" lines, plus the files it
    read from a local index), and the packages it installed."""
    items = json.loads(report.read_text())["install"]
    unit = {"kB": 1e3, "MB": 1e6, "GB": 1e9}
    fetched = {url: float(n) * unit[u] for url, n, u in SIZE.findall(log.read_text())}
    total = sum(fetched.values())
    for item in items:
        url = item["download_info"]["url"]
        if url.startswith("file://") and "vcs_info" not in item["download_info"] and url not in fetched:
            total += Path(url.removeprefix("file://")).stat().st_size
    return int(total), [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items]


def test_colab_path_installs_lib_and_runs_chapters_0_and_1(base, tmp_path):
    repo = clean_commit(tmp_path)
    runtime = fresh_runtime(base, tmp_path)
    env = runtime_env(runtime, tmp_path)
    setups, summary = [], {}
    for chapter in CHAPTERS:
        work = tmp_path / chapter.removesuffix(".ipynb")
        work.mkdir()
        start = time.perf_counter()
        nb, error = execute(colab_notebook(chapter, repo, runtime), runtime, work, env)
        summary[f"{chapter} seconds (setup included)"] = round(time.perf_counter() - start, 1)
        assert not error, f"{chapter} failed in the Colab simulation:\n{error}"
        setup = next(c for c in nb["cells"] if c["cell_type"] == "code" and "REPOSITORY = " in source(c))
        setups.append(cell_text(setup))
        checks = cell_text(nb["cells"][-1])
        assert "explorers built with ipywidgets 7." in checks, checks
        assert "torch 2.13.0" in checks, f"the preinstalled torch was replaced: {checks}"
        if any("exercise-stub" in c.get("metadata", {}).get("tags", []) for c in nb["cells"]):
            printed = "".join(cell_text(c) for c in nb["cells"] if c["cell_type"] == "code")
            assert "Not solved yet: the cells below use the book's version" in printed, f"{chapter}: no fallback"
    first, second = setups
    assert first.startswith("Installing lib") and re.search(r"Done in \d+ s", first), first
    assert "installed already" in second, f"the second chapter's setup cell installed again: {second}"
    size, packages = download_bytes(tmp_path / "pip-report.json", tmp_path / "pip.log")
    summary.update(
        {
            "setup install seconds": int(re.search(r"Done in (\d+) s", first).group(1)),
            "packages installed": len(packages),
            "download MB": round(size / 1e6, 1),
            "installed": packages,
        }
    )
    out = ROOT / "_build" / "colab-simulation.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    assert not [p for p in packages if p.split("==")[0].lower() in ("torch", "ipywidgets")], packages


def test_a_broken_setup_stops_the_chapter(base, tmp_path):
    """A package pip cannot install (here: for another Python): the setup cell raises with pip's message."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    broken = re.sub(r'^requires-python = ".*"$', 'requires-python = ">=3.99"', pyproject, count=1, flags=re.MULTILINE)
    assert broken != pyproject
    repo = clean_commit(tmp_path, pyproject=broken)
    runtime = fresh_runtime(base, tmp_path)
    env = runtime_env(runtime, tmp_path)
    nb, error = execute(colab_notebook(CHAPTERS[0], repo, runtime, only_setup=True), runtime, tmp_path, env)
    assert "pip could not install lib" in error, error
    assert "3.99" in cell_text(nb["cells"][1]), textwrap.shorten(error, 500)


def offline_env() -> dict[str, str]:
    """pip with no configuration and no index: only what is on the stick."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def test_wheelhouse_installs_offline_and_runs_chapter_0(tmp_path):
    """`make wheelhouse`, then a fresh environment installed from it with --no-index, then chapter 0 run there."""
    house = tmp_path / "wheelhouse"
    start = time.perf_counter()
    # STAMP= : use this interpreter's environment as it is (make's .venv set-up is not what is tested here)
    run(["make", "-s", "-C", str(ROOT), "wheelhouse", f"WHEELHOUSE={house}", f"PY={sys.executable}", "STAMP="])
    built = time.perf_counter() - start
    wheels = sorted(house.glob("*.whl"))
    assert not (ROOT / "build").exists(), "make wheelhouse left setuptools' build/ in the repository"
    assert any(w.name.startswith("circuits_from_scratch-") for w in wheels), [w.name for w in wheels]
    venv = tmp_path / "offline"
    env = offline_env()
    run([python_base(), "-m", "venv", str(venv)], env=env)
    python = str(venv / "bin" / "python")
    start = time.perf_counter()
    pip = [python, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(house)]
    run([*pip, "circuits-from-scratch", "jupyterlab"], env=env)
    installed = time.perf_counter() - start
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["JUPYTER_PATH"] = str(venv / "share" / "jupyter")
    nb = load(ROOT / "chapters" / CHAPTERS[0])
    for cell in code_cells(nb):
        cell.update(outputs=[], execution_count=None)
    nb, error = execute(nb, venv, tmp_path, env)
    assert not error, f"chapter 0 failed in the environment installed from the wheelhouse:\n{error}"
    assert "Environment OK." in "".join(cell_text(c) for c in code_cells(nb))
    summary = {
        "wheels": len(wheels),
        "wheelhouse MB": round(sum(w.stat().st_size for w in wheels) / 1e6, 1),
        "make wheelhouse seconds": round(built, 1),
        "offline install seconds": round(installed, 1),
    }
    out = ROOT / "_build" / "wheelhouse.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
