"""Seconds per code cell of chapter 8 (or of other notebooks), each run top to bottom in a fresh kernel, as the book
build runs it.

Usage: ``python bench/natural_cell_times.py [--cpu] [NOTEBOOK ...]`` (default: ``chapters/08_natural_text.ipynb``).
Give the chapter before and after a change in one call: they run back to back, in the order given, so that their ratio
is measured under one load. Each kernel starts in ``chapters/`` whatever the notebook's own folder. Prints the code
cells that took over a second, numbered from 0 among the code cells, and the total.

``--cpu``: instead of a kernel, run the code cells (exercise stubs left out, figures not shown) as one Python process
and print each cell's CPU seconds beside its wall seconds. CPU time moves much less than wall time when other jobs
share the machine (on 2026-12-02, at a load average of 6 on 2 cores, the chapter's wall time swung by 2x).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "08_natural_text.ipynb"


def cell_seconds(path: Path) -> tuple[float, list[float]]:
    """Wall seconds of the whole notebook and of each code cell (from the reply times nbclient records)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(CHAPTER.parent)}}
    )
    start = time.perf_counter()
    client.execute()
    total = time.perf_counter() - start
    seconds = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        timing = cell.metadata.get("execution", {})
        if "iopub.execute_input" not in timing:  # skipped (an exercise stub)
            seconds.append(0.0)
            continue
        began, ended = (dt.datetime.fromisoformat(timing[k]) for k in ("iopub.execute_input", "shell.execute_reply"))
        seconds.append((ended - began).total_seconds())
    return total, seconds


TIMED = """
import json as _json, time as _time
_times = []
{cells}
print("CELL-TIMES " + _json.dumps(_times))
"""

CELL = """
_wall, _cpu = _time.perf_counter(), _time.process_time()
exec(compile({source!r}, "cell {index}", "exec"))
_times.append((_time.perf_counter() - _wall, _time.process_time() - _cpu))
"""


def cell_cpu_seconds(path: Path) -> list[tuple[float, float]]:
    """``(wall, CPU)`` seconds of each code cell run as one script (stubs: ``(0, 0)``)."""
    nb = nbformat.read(path, as_version=4)
    cells = []
    for index, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        skipped = "skip-execution" in cell.metadata.get("tags", [])
        source = "pass" if skipped else cell.source.replace("plt.show()", "plt.close('all')")
        cells.append(CELL.format(source=source, index=index))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(TIMED.format(cells="".join(cells)))
    env = {**os.environ, "MPLBACKEND": "Agg"}
    out = subprocess.run(
        [sys.executable, script.name], cwd=CHAPTER.parent, env=env, capture_output=True, text=True, check=True
    ).stdout
    Path(script.name).unlink()
    return [tuple(t) for t in json.loads(out.rsplit("CELL-TIMES ", 1)[1])]


def main(args: list[str]) -> None:
    cpu = "--cpu" in args
    paths = [Path(a) for a in args if a != "--cpu"] or [CHAPTER]
    for path in paths:
        if cpu:
            times = cell_cpu_seconds(path)
            slow = ", ".join(f"{i}: {w:.1f}/{c:.1f}" for i, (w, c) in enumerate(times) if w >= 1)
            wall, total = sum(w for w, _ in times), sum(c for _, c in times)
            print(f"{path}: {wall:.1f} s wall, {total:.1f} s CPU; cells over 1 s (wall/CPU): {slow}", flush=True)
            continue
        total, seconds = cell_seconds(path)
        slow = ", ".join(f"{i}: {s:.1f}" for i, s in enumerate(seconds) if s >= 1)
        print(f"{path}: {total:.1f} s in all; code cells over 1 s: {slow}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
