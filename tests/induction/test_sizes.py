"""The model family of chapter 10 (lib.induction.sizes)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.induction import models, sequences, sizes

TINY = sizes.Member(n_layers=2, d_model=16, batch_size=4, seq_len=49, steps=4)


def test_member_shapes_the_task_and_the_model() -> None:
    member = sizes.Member(n_layers=3, d_model=128, batch_size=16, seq_len=97)
    config = member.config
    assert (config.n_layers, config.n_heads, config.d_head, config.d_model) == (3, 8, 16, 128)
    assert config.seq_len == 97 and config.vocab == sequences.InductionConfig().vocab
    assert member.tokens_per_step == 16 * 97
    assert member.name == "3L d128 h8 B16 C97"


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"d_model": 40}, "multiple of the head width"),
        ({"batch_size": 0}, "batch_size"),
        ({"seq_len": 30}, "too long for seq_len"),
    ],
)
def test_member_rejects_bad_fields(fields: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sizes.Member(**fields)


@pytest.mark.parametrize("member", [sizes.Member(), sizes.Member(n_layers=3, d_model=32, seq_len=97)])
def test_parameter_count_counts_the_models_parameters(member: sizes.Member) -> None:
    model = models.make_model(member.config, seed=0)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert sizes.parameter_count(member.config) == trainable


def test_checkpoint_scores_gives_one_best_head_per_layer() -> None:
    config = TINY.config
    sets = sequences.eval_sets(config, n=16)
    got = sizes.checkpoint_scores(models.make_model(config, seed=0), sets, config.seq_len)
    assert set(got) == {"repeated loss", "icl", "prefix matching", "previous token"}
    assert len(got["prefix matching"]) == len(got["previous token"]) == 2
    assert 0 <= min(got["prefix matching"]) <= max(got["prefix matching"]) <= 1
    assert math.log(2) < got["repeated loss"] < 10  # a random model: near chance, log 63 nats


def test_train_member_records_every_checkpoint_and_the_heads() -> None:
    run = sizes.train_member(TINY, seed=0, every=2)
    assert run["steps"] == [0, 2, 4]
    assert all(len(run[key]) == 3 for key in ("repeated loss", "icl", "prefix matching", "previous token"))
    assert run["heads_at_start"] == [] and run["heads"] == []  # 4 steps form no induction head
    assert run["parameters"] == sizes.parameter_count(TINY.config)
    with pytest.raises(ValueError, match="every"):
        sizes.train_member(TINY, seed=0, every=0)


def test_onset_dates_the_phase_change_in_steps_and_tokens() -> None:
    member = sizes.Member(batch_size=8)
    run = {"steps": [0, 10, 20, 30, 40], "repeated loss": [4.0, 3.5, 2.0, 0.5, 0.2]}
    found = sizes.onset(run, member)
    assert found == sizes.Onset(step=30, window=(10, 40), tokens=30 * 8 * 49)
    flat = {"steps": [0, 10], "repeated loss": [4.0, 2.5]}
    assert sizes.onset(flat, member) == sizes.Onset(None, None, None)


def test_onset_tokens_counts_b_times_c_tokens_a_step() -> None:
    steps, loss = [0, 50, 100], torch.tensor([4.0, 0.9, 0.1])
    assert sizes.onset_tokens(steps, loss, 8, 49) == 50 * 8 * 49
    assert sizes.onset_tokens(steps, loss + 1, 8, 49) is None
    with pytest.raises(ValueError, match="seq_len"):
        sizes.onset_tokens(steps, loss, 8, 0)


def test_aoyama_tokens_is_the_papers_law() -> None:
    # the example: batch 8 x context 128 predicts about 16 M tokens
    assert sizes.aoyama_tokens(8, 128) == pytest.approx(16.0e6, rel=0.01)
    assert sizes.aoyama_tokens(32, 128) == pytest.approx(2 * sizes.aoyama_tokens(8, 128))
    with pytest.raises(ValueError, match="batch_size"):
        sizes.aoyama_tokens(0, 128)


def test_log_slope_recovers_a_power_law() -> None:
    x = [1.0, 2.0, 4.0, 8.0]
    assert sizes.log_slope(x, [3 * v**0.5 for v in x]) == pytest.approx(0.5)
    assert sizes.log_slope(x, [7.0] * 4) == pytest.approx(0.0)
    for bad, match in [
        (([1.0], [1.0]), "at least 2"),
        (([1.0, 0.0], [1.0, 1.0]), "positive"),
        (([2.0, 2.0], [1.0, 3.0]), "two values"),
    ]:
        with pytest.raises(ValueError, match=match):
            sizes.log_slope(*bad)


def test_spread_is_max_over_min() -> None:
    assert sizes.spread([100, 200, 150]) == 2.0
    assert sizes.spread(torch.tensor([3.0]).tolist()) == 1.0
    with pytest.raises(ValueError, match="positive"):
        sizes.spread([0, 1])


def test_load_family_groups_runs_by_member_in_seed_order(tmp_path) -> None:
    import json

    run = {"steps": [0, 10], "repeated loss": [4.0, 0.5]}
    data = {
        "members": {"2L d64": {"n_layers": 2, "d_model": 64, "batch_size": 32, "seq_len": 49, "steps": 10}},
        "runs": {"2L d64 seed 1": {**run, "seed": 1}, "2L d64 seed 0": {**run, "seed": 0}},
        "every": 10,
    }
    path = tmp_path / "family.json"
    path.write_text(json.dumps(data))
    family = sizes.load_family(path)
    assert family.members == {"2L d64": sizes.Member(steps=10)}
    assert family.seeds == {"2L d64": [0, 1]} and [r["seed"] for r in family.runs["2L d64"]] == [0, 1]
    data["runs"]["3L d64 seed 0"] = run
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="no listed member"):
        sizes.load_family(path)
    with pytest.raises(ValueError, match="bench/size_family.py"):
        sizes.load_family(tmp_path / "missing.json")
