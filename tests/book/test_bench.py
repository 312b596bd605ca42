"""bench/run_all.py, the Performance page's generator: it finds the chapters, measures the host's speed with the plain
loop of bench/induction_train.py, and states each budget on this host and at the reference speed."""

import sys

from bookfiles import ROOT, resolve, toc_files

sys.path.insert(0, str(ROOT / "bench"))
import induction_train  # noqa: E402
import run_all  # noqa: E402


def test_finds_every_chapter_in_toc_order():
    expected = [p.stem for p in map(resolve, toc_files()) if p.suffix == ".ipynb"]
    assert [p.stem for p in run_all.chapters()] == expected
    assert len(expected) == len(
        list((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
    )  # the start page and every chapter


def test_the_plain_loop_runs():  # the host-speed measure: it broke once when lib's task config changed
    rate, _, _ = induction_train.plain(max_steps=3)
    assert rate > 0


def test_verdict_flags_a_slow_host_and_gives_the_reference_time():
    assert run_all.verdict(50.0, 90, None) == "<= 90 s (met)"
    assert run_all.verdict(95.0, 90, 1.25) == "<= 90 s (NOT met on this host; at reference speed 76.0 s, met)"
    assert run_all.verdict(120.0, 90, 1.25).endswith("at reference speed 96.0 s, NOT met)")


def test_chapter_rows_show_the_host_factor():
    results = {"chapters": {"a": 95.0, "b": 30.0}, "host factor": {"a": 1.25, "b": 1.5}}
    rows = run_all.chapter_rows(results)
    assert rows[0][1] == "95.0 s (host x1.25)" and "at reference speed 76.0 s" in rows[0][2]
    total = next(row for row in rows if row[0] == "all chapters")
    assert "at reference speed 96.0 s" in total[2]


def test_the_page_speaks_of_host_factors_only_where_the_table_shows_them():
    with_factors = {"chapters": {"a": 95.0}, "host factor": {"a": 1.25}}
    assert "host x" in run_all.chapter_rows(with_factors)[0][1]
    assert '*host factor* (the "host x" beside it)' in run_all.host_note(with_factors)
    without = {"chapters": {"a": 95.0}}
    assert "host x" not in run_all.chapter_rows(without)[0][1]
    assert "hold no *host factor*" in run_all.host_note(without)
