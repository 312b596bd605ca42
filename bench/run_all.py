"""Time every chapter and every training micro-benchmark; write JSON, a markdown table and the book's
Performance page.

Usage: ``python bench/run_all.py [--skip-chapters] [--only NAME ...]`` (``make bench`` runs it all).

Each chapter is executed top to bottom in a fresh kernel, as the book build does. Each micro-benchmark is
a module ``bench/<name>.py`` with a ``run() -> dict`` that times the book's code against a plain reference
loop in the same process and returns numbers (seconds, steps, ratios) ready to print.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "chapters" / "performance.md"
FIGURES = ROOT / "chapters" / "performance_figures"
"""The page's figures, drawn from the measured numbers (PNG files the page links; committed with it)."""
CHAPTER_BUDGET = 90.0
"""Seconds a chapter may take, top to bottom on a laptop CPU."""
BOOK_BUDGET = 480.0
"""Seconds all chapters together may take."""
REFERENCE_PLAIN_RATE = 33.3
"""The reference speed: steps per second of ``induction_train``'s plain transformer_lens loop in this page's
2026-11-30 run (2-core CPU, one torch thread, load average 1), the run the budgets were set against."""
HOST_STEPS = 60
"""Steps of the plain loop that measure the host's speed before each chapter (about 2 s at the reference speed)."""
MICRO = [
    "ocr_train",
    "ocr_rank_sweep",
    "ocr_theory",
    "prior_knowledge",
    "induction_train",
    "smear_train",
    "ablation_sweep",
]
CHAPTER_OF = {
    "ocr_train": "02_factorized_vs_merged",
    "ocr_rank_sweep": "02_factorized_vs_merged",
    "ocr_theory": "03_why_factorization_generalizes",
    "prior_knowledge": "04_ocr_in_language_models",
    "induction_train": "05_induction_heads",
    "smear_train": "06_smeared_keys",
    "ablation_sweep": "07_ablation",
}
"""The chapter each micro-benchmark measures (the page groups its table by it, and links it)."""


def chapter_link(stem: str, text: str = "") -> str:
    """``[chapter 5](its published page)`` for notebook ``05_...`` (the book keeps the link inside: _ext/own_pages)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from check_repository_url import pages_url

    return f"[{text or f'chapter {int(stem[:2])}'}]({pages_url()}/chapters/{stem}.html)"


NOTES = """\
- **8 seeds batched vs one seed ({ch2}; target: at most 2x).** Not met on the CPU. A profile of one training
  step of the chapter's factorized model (one torch thread) shows why: the forward pass of 8 seeds is 2.8 ms against
  0.28 ms for one seed, because the output map's products grow with the number of seeds (8 x 252 sequences x 128 x
  128 per matrix product) and a CPU core is already busy with one seed's. Batching still beats training the seeds
  one after another (the "sequential / batched" line). Data generation no longer grows with the seeds: all seeds'
  batches come from one sampler call (0.4 ms for 8 seeds). The target needs hardware that one seed leaves idle, a
  GPU.
- **Ablation sweep.** Batching all ablations of a checkpoint into one forward pass is slower than one pass per
  ablation on the CPU (larger tensors, no idle hardware to fill); it is meant for a GPU.
- **GPU.** `bench/gpu_check.sh` runs every chapter and these benchmarks on a CUDA machine that has no network, from
  wheels carried with the tree (`scripts/collect_gpu_wheels.py`); `make gpu-check-cpu` runs it the same way on the
  CPU in CI. No CUDA machine was available when this page was generated, so there are no GPU numbers here yet.
"""


def speed_note(micro: dict) -> str:
    """Chapter 5's set-up against the plain loop, in words, from ``induction_train``'s numbers (empty if absent)."""
    numbers = micro.get("induction_train", {})
    steps, wall = numbers.get("plain / book steps"), numbers.get("plain / book wall time")
    if steps is None or wall is None:
        return ""
    return (
        f"- **Time to the phase change ({chapter_link('05_induction_heads')}).** `induction_train` compares the\n"
        "  chapter's set-up with a plain\n"
        "  transformer_lens loop (a segment repeated once and then fresh random tokens, lr 1e-3, batch 64). The\n"
        f"  plain loop needs {steps:.1f} times the steps and {wall:.1f} times the wall time to the phase change.\n"
        "  Most of the gain is in the number of steps: a segment that repeats until the sequence is full gives\n"
        "  every sequence many more tokens to learn induction from.\n"
    )


def machine() -> dict[str, str]:
    import torch

    from lib.core.device import pick_device

    info = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "device": str(pick_device()),
        "cpu cores": str(os.cpu_count()),
        "platform": platform.platform(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def chapters() -> list[Path]:
    """The book's chapters in toc order."""
    sys.path.insert(0, str(ROOT / "tests" / "book"))
    from bookfiles import resolve, toc_files

    return [p for p in (resolve(e) for e in toc_files()) if p.suffix == ".ipynb"]


def host_factor() -> float:
    """How much slower than the reference speed this host runs now (>1: slower): :data:`REFERENCE_PLAIN_RATE`
    over the plain loop's steps per second, measured for :data:`HOST_STEPS` steps. Measured before and after each
    chapter (their geometric mean is the chapter's factor): a chapter's time divided by it is its time at the reference
    speed. Only on a steady load: where other jobs come and go during a chapter, two 2-second samples can miss them
    (on 2026-12-02, with other jobs starting and stopping, factors of 1.4-6.7 came with reference-speed times of a third
    of the quiet ones), so the page flags a chapter over budget on this host whatever its factor."""
    import torch
    from induction_train import plain

    # on the CPU whatever the chapters run on: the factor measures the host's load, which the reference rate is of
    return round(REFERENCE_PLAIN_RATE / plain(max_steps=HOST_STEPS, device=torch.device("cpu"))[0], 2)


def time_chapter(path: Path) -> float:
    """Wall seconds to execute a chapter in a fresh kernel (stubs skipped, as in the book build); a failing cell (an
    assert of the chapter's) raises ``nbclient``'s ``CellExecutionError``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| measure | seconds / value | target |", "|---|---|---|"]
    return "\n".join(lines + [f"| {a} | {b} | {c} |" for a, b, c in rows])


def verdict(secs: float, budget: float, factor: float | None) -> str:
    """``<= budget (met)``, with the time at the reference speed where the host factor is known; over budget on this
    host is flagged even when the reference-speed time is within it."""
    here = "met" if secs <= budget else "NOT met on this host"
    if factor is None:
        return f"<= {budget:.0f} s ({here})"
    at_reference = "met" if secs / factor <= budget else "NOT met"
    return f"<= {budget:.0f} s ({here}; at reference speed {secs / factor:.1f} s, {at_reference})"


def chapter_rows(results: dict) -> list[tuple[str, str, str]]:
    rows = []
    factors = results.get("host factor", {})
    for name, secs in results.get("chapters", {}).items():
        factor = factors.get(name)
        shown = f"{secs:.1f} s" + (f" (host x{factor:.2f})" if factor is not None else "")
        rows.append((f"chapter `{name}`", shown, verdict(secs, CHAPTER_BUDGET, factor)))
    if results.get("chapters"):
        total = sum(results["chapters"].values())
        known = [results["chapters"][n] / factors[n] for n in results["chapters"] if n in factors]
        mean_factor = total / sum(known) if len(known) == len(results["chapters"]) else None
        rows.append(("all chapters", f"{total:.1f} s", verdict(total, BOOK_BUDGET, mean_factor)))
    cold = RESULTS / "cold_make_test.json"
    if cold.is_file():  # written by bench/cold_make_test.sh (a fresh clone's `make test`)
        measured = json.loads(cold.read_text())
        secs = measured["cold make test, set-up included (s)"]
        rows.append(
            (
                f"cold `make test` on a fresh clone, set-up included ({measured['date']})",
                f"{secs / 60:.1f} min",
                f"<= 20 min ({'met' if secs <= 1200 else 'NOT met'})",
            )
        )
    return rows


def micro_rows(numbers: dict) -> list[tuple[str, str, str]]:
    return [(key, f"{value:.3g}" if isinstance(value, float) else str(value), "") for key, value in numbers.items()]


def markdown(results: dict) -> str:
    """The measured numbers as tables: the chapters, then one table per micro-benchmark, by chapter."""
    parts = []
    if chapter_rows(results):
        parts.append("## Chapters\n\n" + table(chapter_rows(results)))
    if results.get("micro"):
        parts.append("## Training benchmarks\n\nEach benchmark times the book's code against a plain reference loop.")
    for bench, numbers in results.get("micro", {}).items():
        where = f" ({chapter_link(CHAPTER_OF[bench])})" if bench in CHAPTER_OF else ""
        parts.append(f"### `{bench}`{where}\n\n" + table(micro_rows(numbers)))
    return "\n\n".join(parts)


def write_figures(results: dict) -> list[tuple[str, str]]:
    """Draw the page's figures from ``results`` into :data:`FIGURES`; ``(file name, caption)`` of each drawn."""
    import matplotlib

    matplotlib.use("Agg")
    from lib.show import plot

    FIGURES.mkdir(exist_ok=True)
    drawn = []
    if results.get("chapters"):
        fig = plot.chapter_times(results["chapters"], CHAPTER_BUDGET)
        fig.savefig(FIGURES / "chapter_times.png", bbox_inches="tight")
        drawn.append(("chapter_times.png", f"Each chapter's run time against the {CHAPTER_BUDGET:.0f}-second budget."))
    numbers = results.get("micro", {}).get("induction_train", {})
    keys = {
        "book": ("book phase-change step", "book phase-change s (target <= 20)"),
        "plain": ("plain phase-change step", "plain phase-change s"),
    }
    if all(numbers.get(k) is not None for pair in keys.values() for k in pair):
        book, plain = ({"steps": numbers[s], "seconds": numbers[t]} for s, t in keys.values())
        fig = plot.time_to_phase_change(book, plain)
        fig.savefig(FIGURES / "time_to_phase_change.png", bbox_inches="tight")
        drawn.append(
            (
                "time_to_phase_change.png",
                f"{chapter_link('05_induction_heads', 'Chapter 5')}'s set-up against a plain loop, to the phase "
                "change.",
            )
        )
    return drawn


def host_note(results: dict) -> str:
    """The page's sentences on the host's speed, saying what the chapter table shows: host factors where the run
    measured them, else times on this host only."""
    if results.get("host factor"):
        return (
            "Before each chapter a short run of that plain loop measures the host's speed against the reference "
            f"(the plain loop at {REFERENCE_PLAIN_RATE} steps/s: the 2-core CPU the budgets were set on, idle): a "
            'chapter\'s time divided by its *host factor* (the "host x" beside it) is its time at the reference speed '
            "(in the target column). A chapter over budget on a slow or busy host is flagged as such."
        )
    return (
        "The chapter times are this host's, not scaled to a reference speed: the run's results hold no *host "
        "factor* (the host's speed against the reference), so each target is judged on the time as measured."
    )


def write_page(results: dict) -> None:
    m = results["machine"]
    figures = "".join(
        f"```{{figure}} performance_figures/{name}\n:width: 100%\n\n{caption}\n```\n\n"
        for name, caption in write_figures(results)
    )
    PAGE.write_text(
        "# Performance\n\n"
        "How long the book takes to run, measured by `make bench` (`bench/run_all.py`); this page, its tables and "
        "its figures are generated from its latest run. Chapters are executed top to bottom in a fresh kernel, as "
        "the book build does; training benchmarks compare the book's code with a plain reference loop in the same "
        "run. " + host_note(results) + "\n\n"
        f"Measured on {m['date']}: {m['platform']}, {m['cpu cores']} CPU cores, device `{m['device']}`"
        f"{', ' + m['gpu'] if 'gpu' in m else ''}, Python {m['python']}, torch {m['torch']}.\n\n"
        + figures
        + "## Reading the numbers\n\n"
        + speed_note(results.get("micro", {}))
        + NOTES.format(ch2=chapter_link("02_factorized_vs_merged"))
        + "\n"
        + markdown(results)
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-chapters", action="store_true", help="only the micro-benchmarks")
    parser.add_argument("--chapters", nargs="*", default=None, help="chapters to run, by file stem (default: all)")
    parser.add_argument("--only", nargs="*", default=None, help="micro-benchmarks to run (default: all present)")
    parser.add_argument("--no-page", action="store_true", help="do not rewrite chapters/performance.md")
    parser.add_argument("--name", default="latest", help="results file stem under bench/results/ (default: latest)")
    parser.add_argument(
        "--page-only",
        action="store_true",
        help="run nothing: rewrite the page and its figures from bench/results/<name>.json",
    )
    parser.add_argument(
        "--update", action="store_true", help="keep the measures of the previous run that this run does not repeat"
    )
    args = parser.parse_args()
    os.environ.setdefault("CIRCUITS_PROGRESS", "0")
    sys.path.insert(0, str(ROOT / "bench"))

    out = RESULTS / args.name
    if args.page_only:
        write_page(json.loads(out.with_suffix(".json").read_text()))
        print(f"wrote {PAGE} from {out}.json")
        return
    results: dict = {"machine": machine(), "chapters": {}, "micro": {}}
    if args.update and out.with_suffix(".json").is_file():
        previous = json.loads(out.with_suffix(".json").read_text())
        results["chapters"], results["micro"] = previous["chapters"], previous["micro"]
        results["host factor"] = previous.get("host factor", {})
    RESULTS.mkdir(exist_ok=True)
    failed: dict[str, str] = {}

    def save() -> None:  # after every measure: a run cut short (a time limit on a borrowed GPU) keeps what it measured
        results["failed"] = failed
        out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        out.with_suffix(".md").write_text(markdown(results) + "\n")

    if not args.skip_chapters:
        for path in chapters():
            if args.chapters is not None and path.stem not in args.chapters:
                continue
            before = host_factor()
            try:
                secs = time_chapter(path)
            except Exception as error:  # a chapter's failed assert: reported, and the other chapters still run
                failed[path.stem] = f"{type(error).__name__}: {str(error)[-2000:]}"
                print(f"{path.stem:<40} FAILED: {failed[path.stem][-500:]}", flush=True)
            else:
                # before and after the chapter: the load a chapter ran under is between the two, at best
                factor = round((before * host_factor()) ** 0.5, 2)
                results.setdefault("host factor", {})[path.stem] = factor
                results["chapters"][path.stem] = round(secs, 2)
                print(f"{path.stem:<40} {secs:7.1f} s (host x{factor:.2f})", flush=True)
            save()
    for name in args.only if args.only is not None else MICRO:
        if not (ROOT / "bench" / f"{name}.py").is_file():
            print(f"{name}: not present, skipped")
            continue
        numbers = importlib.import_module(name).run()
        results["micro"][name] = numbers
        print(name, json.dumps(numbers), flush=True)
        save()
    save()
    if not args.no_page:
        write_page(results)
    print(f"wrote {out}.json, {out}.md" + ("" if args.no_page else f", {PAGE}"))
    if failed:
        raise SystemExit(f"chapters that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
