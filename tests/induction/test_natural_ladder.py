"""lib.induction.natural.ladder: the small-batch two-layer runs' shipped logs."""

import json

import pytest

from lib.induction.natural import ladder


def test_the_shipped_runs_have_one_value_per_logged_step():
    runs = ladder.load_ladder()
    assert list(runs)[:4] == ["width 128, lr 5e-3", "width 128, lr 1e-2", "width 256, lr 3e-3", "width 128, lr 3e-3"]
    assert [r.settings["data"] for r in runs.values()].count("repeated random tokens") == 4
    for run in runs.values():
        n = len(run.tokens)
        assert n > 10 and run.tokens[0] == 0 and bool((run.tokens.diff() > 0).all())
        assert run.held_loss.shape == run.prefix_matching.shape == run.previous_token.shape == (n,)
        assert run.copies.shape == (n, 2) and run.last_heads.shape == (run.settings["heads"],)
        assert run.last_heads.max() == run.prefix_matching[-1]
        assert {"width", "lr", "batch", "context", "seed", "data", "stopped"} <= set(run.settings)
        assert run.steps[0] == 0 and run.steps[1] in (100, 250, 500)  # the log's interval
        assert all(s % 50 == 0 for s in run.steps)  # whole steps, recovered from the tokens


def test_a_missing_or_foreign_file_says_how_to_make_it(tmp_path):
    with pytest.raises(ValueError, match="bench/natural_ladder.py"):
        ladder.load_ladder(tmp_path / "none.json")
    (tmp_path / "x.json").write_text(json.dumps({"other": 1}))
    with pytest.raises(ValueError, match="lacks"):
        ladder.load_ladder(tmp_path / "x.json")
