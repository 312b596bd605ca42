"""The learner edition as learners run it (``make learner-run``, marker ``learner_run``; CI runs it).

Every notebook of ``learner/`` is executed top to bottom, without strict checks, as in Colab or ``make lab``, with
every exercise met both ways a learner meets it:

- the stub untouched: the check must say the exercise is not implemented yet and that the chapter goes on with
  the book's version;
- then a wrong answer in the stub (``return None``, the stub and its check cell run again right after): the check
  must say what differs and go on with the book's version too;
- then the check cell once more on its own, as after "Run all" or after editing the stub without running it: the
  name now holds the book's version, and the check must say so, never print PASSED.

A check that raises anything but its own failure, or a cell that needs the learner's function to be right, stops
"Run all": this test finds it. (Both ways in one run: each chapter is executed once, not twice.)
"""

import copy
import os
import re
import tempfile

import nbformat
import pytest
from bookfiles import ROOT, tags
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from lib.exercises.framework import BOOK_VERSION

pytestmark = pytest.mark.learner_run

LEARNER = sorted((ROOT / "learner").glob("*.ipynb")) + sorted((ROOT / "learner").glob("*/*.ipynb"))  # learner/ko too
WITH_EXERCISES = [p for p in LEARNER if '"exercise-stub"' in p.read_text()]
FALLBACK = "Not solved yet: the cells below use the book's version"
STUB_BODY = re.compile(r"^(\s+)raise NotImplementedError\s*$", re.M)


def run(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    env = {k: v for k, v in os.environ.items() if k != "CIRCUITS_STRICT_CHECKS"}
    env.update(CIRCUITS_PROGRESS="0", OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
    # IPC sockets in a folder of this run's own: with TCP, two xdist workers' kernels could pick the same free port
    # (one CI run failed "Address already in use"); socket files in separate folders cannot collide
    with tempfile.TemporaryDirectory(prefix="kernel") as sockets:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
        client = NotebookClient(nb, km=km, timeout=900, resources={"metadata": {"path": str(ROOT)}})
        return client.execute(env=env)  # the learner's environment: no strict checks


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def check_cells(nb):
    """(stub cell, the check cell after it) for every exercise."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return [(c, code[i + 1]) for i, c in enumerate(code) if "exercise-stub" in tags(c)]


def load(path):
    return nbformat.reads(path.read_text(), as_version=4)


def with_wrong_answers(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with, after every exercise's check cell, its stub again with a wrong answer and the check again, then
    the check cell alone once more (tag ``run-again``)."""
    nb = copy.deepcopy(nb)
    for stub, check in check_cells(nb):
        assert STUB_BODY.search(stub.source), f"a stub without `raise NotImplementedError`: {stub.source[:60]!r}"
        wrong = copy.deepcopy(stub)
        wrong.source = STUB_BODY.sub(r"\1return None", stub.source)
        wrong.metadata["tags"] = ["exercise-stub", "wrong-answer"]
        at = nb.cells.index(check) + 1
        again = copy.deepcopy(check)
        again.metadata["tags"] = [*tags(check), "run-again"]
        nb.cells[at:at] = [wrong, copy.deepcopy(check), again]
    return nb


def run_again(nb):
    """The check cells :func:`with_wrong_answers` runs a second time without their stub."""
    return [c for c in nb.cells if "run-again" in tags(c)]


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: str(p.relative_to(ROOT / "learner")))
def test_run_all_with_every_stub_untouched_then_wrong(path):
    nb = run(with_wrong_answers(load(path)))
    for stub, check in check_cells(nb):
        out = printed(check)
        if "wrong-answer" in tags(stub):
            assert FALLBACK in out and "not implemented yet" not in out, (
                f"{path.name}: after {stub.source[:60]!r}: {out!r}"
            )
        else:
            assert "not implemented yet" in out and FALLBACK in out, f"{path.name}: after {stub.source[:60]!r}: {out!r}"
    for check in run_again(nb):
        out = printed(check)
        assert BOOK_VERSION in out and "PASSED" not in out, f"{path.name}: {check.source[:80]!r} run again: {out!r}"


def test_each_exercise_is_met_both_ways():
    nb = with_wrong_answers(load(WITH_EXERCISES[0]))
    kinds = ["wrong-answer" in tags(stub) for stub, _ in check_cells(nb)]
    assert kinds == [False, True] * (len(kinds) // 2), kinds
    assert [c.source for c in run_again(nb)] == [check.source for stub, check in check_cells(nb)[1::2]]


def test_the_simulation_covers_every_exercise():
    stubs = sum(len(check_cells(load(p))) for p in WITH_EXERCISES)  # the learner edition's, before doubling
    assert stubs >= 40, f"only {stubs} exercises found in learner/"
