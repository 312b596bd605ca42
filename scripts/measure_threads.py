"""Chapter 5's training speed at torch's default thread count and at fixed counts: the measurement behind
``lib.core.device.BOOK_THREADS`` (numbers in lib/core/device.py's docstring and the README's "CPU threads").

Usage: ``python scripts/measure_threads.py [--steps 100] [--busy]``. Each count runs in a fresh interpreter with
``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` unset; ``--busy`` keeps one pure-Python busy loop running meanwhile
(another program on the same CPU). Prints steps per second and the load average. It trains on the CPU whatever
``CIRCUITS_DEVICE`` says (``models.train_model``'s default device): what it measures is torch's CPU thread count, which
on a GPU only prepares batches.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_RUN = """
import os, sys
from dataclasses import replace
import torch
import lib  # sets its own choice; the run below then sets the count under test
from lib.induction import models, sequences

threads, steps = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(int(threads) if threads != "default" else len(os.sched_getaffinity(0)))
config = replace(models.TRAINING, steps=steps, checkpoint_steps=(), progress=False)
models.train_model(sequences.InductionConfig(), seed=0, train_config=replace(config, steps=10))  # warm-up
_, history = models.train_model(sequences.InductionConfig(), seed=0, train_config=config)
print(f"threads {threads:>7} ({torch.get_num_threads()}): {steps / history.seconds:6.1f} steps/s, "
      f"load average {os.getloadavg()[0]:.1f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--busy", action="store_true", help="keep one busy process running meanwhile")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        for threads in ("default", "1", "2"):
            subprocess.run([sys.executable, "-c", ONE_RUN, threads, str(args.steps)], env=env, check=True)
    finally:
        if busy is not None:
            busy.kill()


if __name__ == "__main__":
    main()
