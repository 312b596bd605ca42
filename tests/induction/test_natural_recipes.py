"""lib.induction.natural.recipes: issue 29's named runs have the settings the issue gives, and the loop logs what it
should (a few steps of B1 on a slice of chapter 8's corpus)."""

import io
import json
from dataclasses import replace

import pytest
import torch

from lib.core.tokens import BOS
from lib.induction.natural import recipes, runs
from lib.induction.natural.slim import SlimModel


def test_b1_is_chapter_8s_two_layer_run_with_shortformer_positions():
    b1, b2, a = (recipes.recipes()[name] for name in ("B1", "B2", "A"))
    shipped = runs.load_run("two layers")
    c, t = shipped.config, shipped.train
    m = b1.model
    assert (m.n_layers, m.n_heads, m.d_model, m.d_head, m.n_ctx) == (
        c.n_layers,
        c.n_heads,
        c.d_model,
        c.d_head,
        c.seq_len,
    )
    assert (b1.lr, b1.warmup_steps, b1.batch_size, b1.steps, b1.weight_decay) == (
        t.lr,
        t.warmup_steps,
        t.batch_size,
        t.steps,
        t.weight_decay,
    )
    assert m.positions == "shortformer" and not m.layer_norm and not c.layer_norm and b1.clip == 0
    assert b1.corpus == "stdlib" and m.d_vocab == 1024
    assert b2 == type(b1)(**{**b1.__dict__, "model": type(m)(**{**m.__dict__, "layer_norm": True})})


def test_a_is_the_published_style_recipe_of_the_issue():
    a = recipes.recipes()["A"]
    m = a.model
    assert (m.n_layers, m.d_model, m.n_heads, m.d_head, m.n_ctx, m.d_vocab) == (2, 256, 8, 32, 512, 4096)
    assert m.layer_norm and m.positions == "shortformer" and a.corpus == "code"
    assert (a.batch_size, a.lr, a.weight_decay, a.warmup_steps, a.clip, a.steps) == (128, 1e-3, 0.05, 500, 1.0, 8000)
    assert 0.5e9 < a.steps * a.tokens_per_step < 0.55e9


def test_recipe_errors():
    b1 = recipes.recipes()["B1"]
    with pytest.raises(ValueError, match="corpus"):
        type(b1)(b1.model, corpus="wiki")
    with pytest.raises(ValueError, match="clip"):
        type(b1)(b1.model, clip=-1.0)
    with pytest.raises(ValueError, match="name"):
        recipes.run("C", io.StringIO())
    with pytest.raises(ValueError, match=r"data must be one of \['text', 'repeated random tokens'\]"):
        type(b1)(b1.model, data="noise")
    with pytest.raises(ValueError, match=r"repeat_share must be a number in \[0, 1\]"):
        type(b1)(b1.model, repeat_share=2.0)
    with pytest.raises(ValueError, match="repeat_share applies to text only"):
        type(b1)(b1.model, data="repeated random tokens", repeat_share=0.1)


def test_train_config_checkpoints_every_and_at_the_end():
    b1 = recipes.recipes()["B1"]
    assert b1.train_config(250).checkpoint_steps == (0, 100, 200, 250)
    assert b1.train_config().checkpoint_steps[-1] == b1.steps


def test_clipping_clips_every_step_while_registered():
    weight = torch.nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.SGD([weight], lr=1.0)
    remove = recipes._clipping(1.0)
    try:
        weight.grad = torch.tensor([3.0, 4.0, 0.0])
        optimizer.step()
    finally:
        remove()
    torch.testing.assert_close(weight.detach(), torch.tensor([-0.6, -0.8, 0.0]))
    weight.grad = torch.tensor([3.0, 4.0, 0.0])
    optimizer.step()  # removed: no clipping
    torch.testing.assert_close(weight.detach(), torch.tensor([-3.6, -4.8, 0.0]))


def test_probe_pool_skips_bos_and_the_most_frequent():
    ids = torch.cat([torch.full((1000,), BOS), torch.arange(1, 300).repeat_interleave(torch.arange(299, 0, -1))])
    pool = recipes.probe_pool(ids, 300)
    assert pool.tolist() == list(range(33, 257))  # token t occurs 300 - t times: ranks 33 .. 256


def test_a_few_steps_log_every_score():
    """B1's loop on a small model of the same kind (the dry run in bench/README.md runs B1 itself)."""
    b1 = recipes.recipes()["B1"]
    small = replace(b1, model=replace(b1.model, d_model=16, d_head=4, n_ctx=64), batch_size=4, steps=3, every=2)
    log = io.StringIO()
    result = recipes.run(small, log, limit=100_000)
    lines = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [line["step"] for line in lines] == [0, 2, 3] and result["loss"].shape == (3,)
    last = lines[-1]
    assert len(last["prefix_matching"]) == 2 and len(last["prefix_matching"][1]) == 8
    assert last["best_layer1_pm"] == max(last["prefix_matching"][1])
    assert 0 <= last["best_layer1_pm"] <= 1 and last["train_loss"] == pytest.approx(result["loss"][2:].mean().item())
    assert lines[0]["train_loss"] is None and 6.0 < lines[0]["held_loss"] < 8.0  # near log 1024 at initialisation
    assert sorted(result["checkpoints"]) == [0, 2, 3] and result["tokens_per_second"] > 0
    assert result["recipe"]["model"]["positions"] == "shortformer"


def test_random_repeats_is_chapter_5s_task_at_the_models_vocabulary_and_context():
    m = recipes.recipes()["B1"].model
    task = recipes.random_repeats(m)
    assert (task.vocab, task.seq_len, task.min_repeat, task.max_repeat) == (1024, 256, 8, 127)


@pytest.mark.parametrize("data, share", [("text", 1.0), ("repeated random tokens", 0.0)])
def test_the_loop_trains_on_what_the_recipe_names(data, share):
    """The training loss at step 0 is the same model on the first batch: a batch of repeated random tokens is the
    chapter 5 task's, a planted text batch is the plain batch with its repeats."""
    b1 = recipes.recipes()["B1"]
    small = replace(
        b1,
        model=replace(b1.model, d_model=16, d_head=4, n_ctx=80),
        batch_size=4,
        steps=1,
        every=1,
        data=data,
        repeat_share=share,
    )
    result = recipes.run(small, io.StringIO(), limit=100_000)
    model = SlimModel(small.model, seed=small.seed)
    if data == "text":
        ids = recipes.corpus_ids(small, 100_000)[0]
        batch = recipes.corpus.batch_fn(ids, 80, small.seed, share)(4, torch.Generator())
        assert (batch != recipes.corpus.batch_fn(ids, 80, small.seed)(4, torch.Generator())).any(1).all()
    else:
        batch = recipes.sequences.make_batch_fn(recipes.random_repeats(small.model))(
            4, torch.Generator().manual_seed(small.seed)
        )
    expected = recipes.scores.per_token_loss(model, batch).mean()
    assert result["loss"][0].item() == pytest.approx(expected.item(), rel=1e-5)
