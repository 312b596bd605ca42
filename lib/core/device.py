"""Pick the device every chapter runs on, the number of CPU threads, and seed every random number generator.

The same code runs on a laptop CPU, an Apple GPU (mps, when asked) and a CUDA GPU: chapters ask
:func:`pick_device` once and create every tensor on the model's device.

Importing ``lib`` calls :func:`configure_threads` once: torch computes on ONE CPU thread
(:data:`BOOK_THREADS`) unless the user chose a number (``OMP_NUM_THREADS``, or ``torch.set_num_threads``).
Why one: the book's models are tiny, so a step is a few small matrix products and extra threads mostly wait on each
other; and a learner's CPU is often shared (a free Colab CPU runtime typically has two virtual CPUs; a laptop runs
a browser).
Chapter 5's training (2 layers, batch 32), steps per second on this book's 2-core machine
(``python scripts/measure_threads.py [--busy]`` measures it again):

| condition (scripts/measure_threads.py, 30-100 steps)          | default (2 threads) | 1 thread  |
|----------------------------------------------------------------|---------------------|-----------|
| shared machine, load average 10-11                             | 0.5 (2 threads 0.8) | 7.5       |
| shared machine, load average 4-6                               | 1.7                 | 21-30     |
| the same plus one busy process of ours                         | 2.7                 | 16-58     |
| load average 4.5 (2 threads set explicitly: 4.8)               | 2.7                 | 49.6      |
| another process busy (issue 19's first simulation)             | 1.1                 | 29.6      |
| load average 3-5 (bench/README.md, induction_train.py)         | 6.5                 | 33        |

The machine is shared with other jobs, so single runs vary (the 1-thread runs by up to 3x); the gap does not.
torch's default here is 2 threads (one per CPU). On an idle CPU two threads were about 30% faster for chapter 5
(the Makefile's note); as soon as anything else runs, they were 5 to 27 times slower. One thread loses little when the
CPU is idle and avoids the collapse when it is not. On a GPU the CPU threads only prepare batches.
"""

from __future__ import annotations

import os
import random
import time
from typing import Literal, TypeVar, get_args

import numpy as np
import torch

from lib.core import validate

DEVICE_ENV = "CIRCUITS_DEVICE"
"""Environment variable that overrides the automatic choice, e.g. ``CIRCUITS_DEVICE=cpu``."""

DeviceName = Literal["auto", "cuda", "mps", "cpu"]
"""The names :func:`pick_device` accepts (in any case): ``"auto"`` or a device kind."""

KNOWN_DEVICES: tuple[DeviceName, ...] = get_args(DeviceName)

THREAD_ENVS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables by which a user chooses torch's CPU thread count; :func:`configure_threads` respects them."""

BOOK_THREADS = 1
"""torch's CPU threads when the user chose none (see the module docstring for the measurements behind it)."""


def configure_threads(threads: int = BOOK_THREADS) -> int:
    """Set torch's CPU thread count to ``threads`` unless the user already chose one; return the count in force.

    The user's choice wins: an ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` environment variable, or a
    ``torch.set_num_threads(n)`` call before ``import lib`` (detected as a count different from torch's
    default, one thread per usable CPU). ``torch.set_num_threads(n)`` after ``import lib`` always wins too.
    ``import lib`` calls this once.

    Raises:
        ValueError: ``threads`` is not a positive integer.
    """
    validate.positive_int("threads", threads)
    if any(os.environ.get(name, "").strip() for name in THREAD_ENVS):
        return torch.get_num_threads()
    if torch.get_num_threads() != _default_threads():
        return torch.get_num_threads()
    torch.set_num_threads(threads)
    return threads


def _default_threads() -> int:
    """The thread count torch starts with when no environment variable sets one: the CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def available_devices() -> list[str]:
    """The device kinds usable on this machine, best first."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    found.append("cpu")
    return found


AUTO_KINDS = ("cuda", "cpu")
"""What ``"auto"`` picks from, best first. Apple's ``mps`` only when asked (``CIRCUITS_DEVICE=mps``): it has no
float64 and no SVD (the book moves those to the CPU, but a learner's own exercise code would stop on them), and for
models this small a laptop's CPU trains a chapter in minutes; a CUDA GPU runs the same code exactly as the CPU does,
to rounding."""


def pick_device(name: str | None = None) -> torch.device:
    """Return the device to compute on: ``"auto"`` picks cuda, else the CPU (:data:`AUTO_KINDS`: mps only when asked).

    Args:
        name: ``"auto"`` (default), ``"cuda"``, ``"mps"`` or ``"cpu"``. When ``None``, the
            environment variable ``CIRCUITS_DEVICE`` is used if set, else ``"auto"``.

    Raises:
        ValueError: the name is not one of the known kinds, or that kind is not available here.
    """
    if name is None:
        name = os.environ.get(DEVICE_ENV, "auto")
    kind = str(name).strip().lower()
    if kind not in KNOWN_DEVICES:
        source = f" (from ${DEVICE_ENV})" if name == os.environ.get(DEVICE_ENV) else ""
        raise ValueError(f"unknown device {name!r}{source}; allowed: {', '.join(KNOWN_DEVICES)}")
    usable = available_devices()
    if kind == "auto":
        return torch.device(next(k for k in usable if k in AUTO_KINDS))
    if kind not in usable:
        raise ValueError(f"device {kind!r} is not available on this machine; available: {', '.join(usable)}")
    return torch.device(kind)


def check_device(device: torch.device | str | None) -> torch.device | None:
    """Validate a ``device`` argument of a public function: ``None`` stays ``None`` (the callee's default).

    Accepts a ``torch.device`` or a name such as ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``.

    Raises:
        ValueError: the name is not a device, or its kind is not available on this machine.
    """
    if device is None:
        return None
    try:
        resolved = device if isinstance(device, torch.device) else torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"unknown device {device!r}; allowed: cuda, mps, cpu (optionally with an index, e.g. 'cuda:0')"
        ) from None
    usable = available_devices()
    if resolved.type not in usable:
        raise ValueError(f"device {str(resolved)!r} is not available on this machine; available: {', '.join(usable)}")
    return resolved


Moved = TypeVar("Moved")


def to_device(batch: Moved, device: torch.device | str) -> Moved:
    """``batch`` with every tensor in it on ``device``: a tensor, or a tuple (named or not), list or dict of them,
    nested; anything else is returned as it is. A tensor already there is not copied.

    The book draws random data on the CPU and moves it with this, so every device sees the same numbers.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(device)  # type: ignore[return-value]
    if isinstance(batch, tuple):
        moved = [to_device(item, device) for item in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else tuple(moved)  # type: ignore[return-value]
    if isinstance(batch, list):
        return [to_device(item, device) for item in batch]  # type: ignore[return-value]
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}  # type: ignore[return-value]
    return batch


def synchronize(device: torch.device | str | None = None) -> None:
    """Wait until every kernel queued on ``device`` has finished (a no-op on the CPU, where nothing is queued).

    A GPU runs kernels asynchronously: without this, a clock read after a training loop measures only how long
    it took to queue the work.
    """
    kind = torch.device(device).type if device is not None else pick_device().type
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()


def clock(device: torch.device | str | None = None) -> float:
    """``time.perf_counter()`` once ``device`` has finished its queued work (:func:`synchronize`): time a stretch
    of GPU work as ``start = clock(d)`` ... ``clock(d) - start``."""
    synchronize(device)
    return time.perf_counter()


GPU_RTOL, GPU_ATOL = 1e-5, 1e-6
"""How close two float32 results must be off the CPU where the maths says they are equal (:func:`assert_same`)."""


def assert_same(actual: torch.Tensor, expected: torch.Tensor, message: str) -> None:
    """Assert that two results the maths says are equal are: bit for bit on the CPU, where the book's computations
    are deterministic, and within ``rtol`` :data:`GPU_RTOL`, ``atol`` :data:`GPU_ATOL` elsewhere, where a GPU may
    sum in another order (cuBLAS picks its kernel by the shapes, e.g. by the batch size).

    Raises:
        AssertionError: ``message``, with where they differ most.
    """
    if actual.device.type == "cpu" and expected.device.type == "cpu":
        if not torch.equal(actual, expected):
            gap = (actual.double() - expected.double()).abs().max().item() if actual.shape == expected.shape else None
            raise AssertionError(f"{message} (not bit for bit on the CPU; largest difference {gap})")
        return
    torch.testing.assert_close(
        actual, expected, rtol=GPU_RTOL, atol=GPU_ATOL, msg=lambda detail: f"{message}\n{detail}"
    )


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices) and return a CPU ``torch.Generator`` with that seed.

    Raises:
        ValueError: the seed is not an integer in [0, 2**63).
    """
    validate.seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device
    return torch.Generator().manual_seed(seed)


def describe_environment() -> dict[str, str]:
    """Versions and device as printed by the start-here chapter's environment check (the system as its name and
    processor, ``Linux x86_64``: the whole platform string names a kernel build, which tells a reader nothing)."""
    import platform
    import sys
    from importlib.metadata import PackageNotFoundError, version

    try:
        lens = version("transformer-lens")
    except PackageNotFoundError:
        lens = "not installed"
    info = {
        "python": sys.version.split()[0],
        "system": f"{platform.system()} {platform.machine()}",
        "torch": torch.__version__,
        "transformer_lens": lens,
        "device": str(pick_device()),
        "torch CPU threads": str(torch.get_num_threads()),
        "available devices": ", ".join(available_devices()),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info
