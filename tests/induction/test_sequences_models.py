import inspect
import math
from dataclasses import replace

import pytest
import torch

from lib.core.tokens import BOS, EVAL_SEED
from lib.core.train import TrainConfig, train
from lib.induction import handbuilt, models, sequences
from lib.induction.scores import masked_mean, per_token_loss


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_repeated_sequences_structure(seed):
    config = sequences.InductionConfig()
    tokens, period = sequences.repeated_sequences(64, sequences.seeded_generator(seed), config)
    assert tokens.shape == (64, config.seq_len) and tokens.dtype == torch.int64
    assert (tokens[:, 0] == BOS).all()
    assert ((tokens[:, 1:] >= 1) & (tokens[:, 1:] < config.vocab)).all()
    assert ((period >= config.min_repeat) & (period <= config.max_repeat)).all()
    for row, p in zip(tokens, period.tolist()):
        body = row[1:]
        assert len(set(body[:p].tolist())) == p, "the segment's tokens are distinct"
        idx = torch.arange(len(body))
        assert torch.equal(body, body[idx % p])


def test_distinct_tokens_are_distinct_in_their_band():
    drawn = sequences.distinct_tokens(200, 6, 3, 12, sequences.seeded_generator(0))
    assert drawn.shape == (200, 6) and drawn.dtype == torch.int64
    assert ((drawn >= 3) & (drawn < 12)).all()
    assert all(len(set(row)) == 6 for row in drawn.tolist())
    assert set(drawn.flatten().tolist()) == set(range(3, 12))  # every id of the band is drawn
    with pytest.raises(ValueError, match=r"need at least length = 10 ids in \[low, high\) = \[3, 12\)"):
        sequences.distinct_tokens(2, 10, 3, 12, sequences.seeded_generator(0))


def test_periods_vary_and_seed_reproduces():
    a, pa = sequences.repeated_sequences(256, sequences.seeded_generator(3))
    b, pb = sequences.repeated_sequences(256, sequences.seeded_generator(3))
    assert torch.equal(a, b) and torch.equal(pa, pb)
    assert len(set(pa.tolist())) > 10, "the period must vary between samples"


def test_repeat_mask_marks_exactly_the_induction_predictable_tokens():
    config = sequences.InductionConfig()
    tokens, period = sequences.repeated_sequences(32, sequences.seeded_generator(0), config)
    mask = sequences.repeat_mask(period, config)
    assert mask.shape == (32, config.seq_len - 1)
    for b in range(32):
        for p in range(config.seq_len - 1):
            seen_before = tokens[b, p].item() in tokens[b, :p].tolist()
            assert mask[b, p].item() == seen_before
            if seen_before:
                earlier = tokens[b, :p].tolist().index(tokens[b, p].item())
                assert tokens[b, earlier + 1] == tokens[b, p + 1]


def test_prefix_matching_tokens():
    config = sequences.InductionConfig()
    tokens = sequences.prefix_matching_tokens(256, sequences.seeded_generator(0), config)
    assert tokens.shape == (256, config.seq_len)
    assert (tokens[:, 0] == BOS).all()
    period = sequences.repeat_period(tokens)
    shortest, longest = config.prefix_periods
    assert (shortest, longest) == (5, 12)
    assert set(period.tolist()) == set(range(shortest, longest + 1)), "every segment length occurs"
    for row, n in zip(tokens, period.tolist()):
        segment = row[1 : 1 + n]
        assert len(set(segment.tolist())) == n
        assert torch.equal(row[1:], segment.repeat(config.seq_len)[: config.seq_len - 1])
        assert (config.seq_len - 1) // n >= config.prefix_repeats, "the segment appears at least prefix_repeats times"
    small = sequences.InductionConfig(seq_len=17, max_repeat=8, prefix_segment=4)
    assert small.prefix_periods == (4, 4), "the shortest segment is capped at the longest"


def test_repeat_period_reads_the_segment_length():
    tokens, period = sequences.repeated_sequences(64, sequences.seeded_generator(1))
    assert torch.equal(sequences.repeat_period(tokens), period)
    with pytest.raises(ValueError, match="repeat its first content token"):
        sequences.repeat_period(torch.tensor([[0, 1, 2, 3]]))
    with pytest.raises(ValueError, match="seq >= 3"):
        sequences.repeat_period(torch.tensor([0, 1, 1]))


def test_fixed_offset_share_is_right_when_the_period_divides_offset_plus_one():
    config = sequences.InductionConfig()
    tokens, period = sequences.repeated_sequences(256, sequences.seeded_generator(0), config)
    mask = sequences.repeat_mask(period, config)
    share = sequences.fixed_offset_share(tokens, mask)
    assert share.shape == (config.seq_len - 1,)
    # by brute force: the token d back from p is the answer iff the period divides d + 1 (and p - d >= 1)
    for d in (0, 4, 9, 11, 23, 40):
        right = [
            (p - d >= 1 and (d + 1) % int(period[b]) == 0)
            for b in range(256)
            for p in range(config.seq_len - 1)
            if mask[b, p]
        ]
        assert share[d].item() == pytest.approx(sum(right) / len(right))
    assert share[0].item() == 0.0, "the current token is never the next one"
    assert share.max().item() < 0.25, "no fixed offset solves the task"
    one_period = sequences.repeated_sequences(
        8, sequences.seeded_generator(0), replace(config, min_repeat=7, max_repeat=7)
    )[0]
    one_mask = sequences.repeat_mask(torch.full((8,), 7), config)
    assert sequences.fixed_offset_share(one_period, one_mask)[6].item() == 1.0, (
        "with one period, offset period - 1 wins"
    )
    with pytest.raises(ValueError, match="bool mask"):
        sequences.fixed_offset_share(tokens, mask.float())
    with pytest.raises(ValueError, match="no prediction"):
        sequences.fixed_offset_share(tokens, torch.zeros_like(mask))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seq_len=40, max_repeat=24), "too long for seq_len"),
        (dict(vocab=16), "vocab=16 is too small"),
        (dict(vocab=2), "vocab must be an integer >= 3"),
        (dict(prefix_repeats=1), "prefix_repeats must be an integer >= 2"),
        (dict(d_head=True), "d_head must be a positive integer"),
        (dict(min_repeat=10, max_repeat=5), "min_repeat"),
        (dict(n_layers=0), "n_layers"),
        (dict(prefix_segment=20), "prefix-matching set needs"),
        (dict(init_std=-1.0), "init_std"),
    ],
)
def test_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sequences.InductionConfig(**kwargs)


def test_set_head_rejects_unknown_head_or_layer():
    model = models.make_model(sequences.InductionConfig().with_layers(1))
    handbuilt.set_head(model, 0, 3, W_V=torch.zeros(64, 16))
    assert torch.equal(model.W_V[0, 3], torch.zeros(64, 16))
    with pytest.raises(ValueError, match="head must be an integer in \\[0, 3\\], got 4"):
        handbuilt.set_head(model, 0, 4, W_V=torch.zeros(64, 16))
    with pytest.raises(ValueError, match="layer must be an integer in \\[0, 0\\], got 1"):
        handbuilt.set_head(model, 1, 0, W_V=torch.zeros(64, 16))
    with pytest.raises(ValueError, match="layer must be"):
        handbuilt.set_head(model, True, 0)


def test_bad_batch_and_seed():
    with pytest.raises(ValueError, match="batch"):
        sequences.repeated_sequences(0, sequences.seeded_generator(0))
    with pytest.raises(ValueError, match="batch"):
        sequences.prefix_matching_tokens(1.5, sequences.seeded_generator(0))
    with pytest.raises(ValueError, match="seed"):
        models.make_model(seed=-1)
    with pytest.raises(ValueError, match="seed"):
        sequences.seeded_generator(-1)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        sequences.eval_sets(n=0)


@pytest.mark.parametrize("n_layers", [1, 2])
def test_make_model_shapes_hooks_and_seed(n_layers):
    config = sequences.InductionConfig(n_layers=n_layers)
    model = models.make_model(config, seed=0)
    assert model.W_Q.shape == (n_layers, 4, 64, 16) and model.W_O.shape == (n_layers, 4, 16, 64)
    assert model.W_E.shape == (64, 64) and model.W_U.shape == (64, 64)
    tokens, _ = sequences.repeated_sequences(2, sequences.seeded_generator(0), config)
    logits, cache = model.run_with_cache(tokens)
    assert logits.shape == (2, config.seq_len, config.vocab)
    assert cache[f"blocks.{n_layers - 1}.attn.hook_pattern"].shape == (2, 4, config.seq_len, config.seq_len)
    assert cache["blocks.0.attn.hook_k"].shape == (2, config.seq_len, 4, 16)
    same = models.make_model(config, seed=0)
    other = models.make_model(config, seed=1)
    assert torch.equal(model.W_K, same.W_K) and not torch.equal(model.W_K, other.W_K)
    # transformer_lens' own per-token loss agrees with ours
    ours = per_token_loss(model, tokens)
    theirs = model(tokens, return_type="loss", loss_per_token=True)
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_init_std_is_used():
    model = models.make_model(sequences.InductionConfig(init_std=0.02), seed=0)
    assert abs(model.W_E.std().item() - 0.02) < 0.003
    default = models.make_model(sequences.InductionConfig(), seed=0)
    assert abs(default.W_E.std().item() - 0.8 / math.sqrt(64)) < 0.01


def test_hand_built_model_beats_chance():
    model = handbuilt.hand_built_model(vocab=32, seq_len=45)
    config = models.config_of(model)
    tokens, period = sequences.repeated_sequences(128, sequences.seeded_generator(0), config)
    mask = sequences.repeat_mask(period, config)
    with torch.inference_mode():
        loss = per_token_loss(model, tokens)
    repeated, first = masked_mean(loss, mask).item(), masked_mean(loss, ~mask).item()
    assert repeated < 0.01
    assert abs(first - math.log(32)) < 0.05


def test_hand_built_head_weights_land_where_intended():
    layout = handbuilt.HandBuiltLayout(8, 12)
    model = handbuilt.hand_built_model(8, 12, strength=5.0)
    weights = handbuilt.induction_head_weights(layout, 5.0)
    assert torch.allclose(model.W_Q[1, 0], weights["W_Q"]) and torch.allclose(model.W_O[1, 0], weights["W_O"])
    assert torch.allclose(model.b_Q[1, 0], weights["b_Q"])
    with pytest.raises(ValueError, match="strength"):
        handbuilt.hand_built_model(strength=0.0)


def test_make_batch_fn_trains_with_lib_train():
    config = sequences.InductionConfig(
        n_layers=1, d_model=16, d_head=4, n_heads=2, vocab=32, seq_len=25, max_repeat=12, prefix_segment=6
    )
    model = models.make_model(config)
    history = train(
        model,
        sequences.make_batch_fn(config),
        models.training_loss,
        TrainConfig(steps=30, lr=3e-3, batch_size=8, checkpoint_steps=(0, 30), progress=False),
    )
    assert history.loss.shape == (30,) and set(history.checkpoints) == {0, 30}
    assert history.loss[-5:].mean() < history.loss[:5].mean()


def test_train_model_is_make_model_then_train():
    config = sequences.InductionConfig(n_layers=1, d_model=16, d_head=4, n_heads=2)
    short = TrainConfig(steps=3, lr=3e-3, batch_size=4, checkpoint_steps=(0, 3), seed=5, progress=False)
    model, history = models.train_model(config, seed=2, train_config=short)
    by_hand = models.make_model(config, seed=2)
    manual = train(by_hand, sequences.make_batch_fn(config), models.training_loss, replace(short, seed=2))
    assert torch.equal(history.loss, manual.loss)
    assert sorted(history.checkpoints) == [0, 3]
    for key, value in by_hand.state_dict().items():
        assert torch.equal(model.state_dict()[key], value)
    assert models.TRAINING.steps == 600 and models.TRAINING.lr == 3e-3 and models.TRAINING.batch_size == 32


def test_fit_trains_a_given_model_with_its_seed():
    config = sequences.InductionConfig(n_layers=1, d_model=16, d_head=4, n_heads=2)
    short = TrainConfig(steps=3, lr=3e-3, batch_size=4, seed=5, progress=False)
    a, b = models.make_model(config, seed=0), models.make_model(config, seed=0)
    history = models.fit(a, config, 2, train_config=short, evaluate=None)
    manual = train(b, sequences.make_batch_fn(config), models.training_loss, replace(short, seed=2))
    assert torch.equal(history.loss, manual.loss) and torch.equal(a.W_Q, b.W_Q)


def test_induction_head_weights_source_fits_the_page():
    """Chapter 5 prints this function's source: every line must fit the 79-column code cell."""
    lines = inspect.getsource(handbuilt.induction_head_weights).splitlines()
    assert max(len(line) for line in lines) <= 79


def test_eval_sets_are_fixed_and_drawn_in_chapter_order():
    """eval_sets is the recipe chapters 5-7 share: one seeded generator, repeated sequences, prefix set, copy tokens."""
    config = sequences.InductionConfig()
    sets = sequences.eval_sets(config, "cpu", n=16)
    g = sequences.seeded_generator(EVAL_SEED)
    tokens, period = sequences.repeated_sequences(16, g, config)
    assert torch.equal(sets.tokens, tokens) and torch.equal(sets.period, period)
    assert torch.equal(sets.mask, sequences.repeat_mask(period, config))
    assert torch.equal(sets.prefix_tokens, sequences.prefix_matching_tokens(64, g, config))
    assert torch.equal(sets.copy_tokens, torch.randint(1, config.vocab, (25,), generator=g))
    again = sequences.eval_sets(config, "cpu", n=16)
    assert all(torch.equal(a, b) for a, b in zip(sets, again))


def test_every_period_gives_one_sequence_per_period():
    config = sequences.InductionConfig()
    tokens, period = sequences.every_period(config)
    assert period.tolist() == list(range(config.min_repeat, config.max_repeat + 1))
    assert torch.equal(sequences.repeat_period(tokens), period)
    assert tokens.shape == (len(period), config.seq_len)


def test_best_offset_mix():
    config = sequences.InductionConfig()
    # one period: the distance period - 1 is always right, so the mix learns to put everything there
    one = replace(config, min_repeat=7, max_repeat=7)
    tokens, period = sequences.every_period(one)
    scores, loss = sequences.best_offset_mix(tokens, sequences.repeat_mask(period, one), steps=300)
    assert loss.shape == (301,) and loss[-1] < 0.05 and int(scores.argmax()) in (6, 13, 20, 27, 34, 41)
    # all periods: a position-only head stays far from solving the task, and better than its start
    tokens, period = sequences.every_period(config)
    mask = sequences.repeat_mask(period, config)
    scores, loss = sequences.best_offset_mix(tokens, mask, steps=100)
    # all-equal scores attend evenly to positions 0 .. p: the right token holds (its copies) / (p + 1)
    uniform = [
        -math.log((tokens[b, : p + 1] == tokens[b, p + 1]).sum().item() / (p + 1))
        for b in range(len(period))
        for p in range(config.seq_len - 1)
        if mask[b, p]
    ]
    assert loss[0].item() == pytest.approx(sum(uniform) / len(uniform), rel=1e-5)
    assert 2.0 < loss[-1] < loss[0]
    with pytest.raises(ValueError, match="steps"):
        sequences.best_offset_mix(tokens, mask, steps=0)
