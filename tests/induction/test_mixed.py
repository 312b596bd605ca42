"""lib.induction.mixed: the task's layout and masks, seeds, bad configs, and the ICL split by kind of position."""

import pytest
import torch

from lib.core.tokens import BOS
from lib.induction import mixed
from lib.induction.sequences import seeded_generator

CONFIG = mixed.MixedConfig()


@pytest.fixture(scope="module")
def data():
    return mixed.mixed_sequences(64, seeded_generator(0), CONFIG)


def test_shapes_and_bos(data):
    assert data.tokens.shape == (64, CONFIG.seq_len) and data.tokens.dtype == torch.int64
    assert data.repeated.shape == data.unigram.shape == (64, CONFIG.seq_len - 1)
    assert (data.tokens[:, 0] == BOS).all() and (data.tokens[:, 1:] >= 1).all()
    assert (data.tokens < CONFIG.vocab).all()
    assert not (data.repeated & data.unigram).any()


def test_repeated_positions_are_predictable_by_induction(data):
    """At a repeated position the current token occurred once before, followed then by the answer."""
    tokens = data.tokens
    for b, p in data.repeated.nonzero().tolist():
        earlier = (tokens[b, :p] == tokens[b, p]).nonzero().flatten().tolist()
        assert earlier, "a segment token occurred before its repeat"
        assert all(tokens[b, e + 1] == tokens[b, p + 1] for e in earlier), "and was followed by the answer"


def test_unigram_tokens_come_from_a_small_subset_outside_the_segment(data):
    for b in range(len(data.tokens)):
        drawn = data.tokens[b, 1:][data.unigram[b]].unique()
        assert len(drawn) <= CONFIG.support
        segment = data.tokens[b, 1:][~data.unigram[b]].unique()
        assert not set(drawn.tolist()) & set(segment.tolist())


def test_segment_lengths_vary_and_every_sequence_has_both_kinds_late(data):
    counts = data.repeated.sum(dim=1) // (CONFIG.copies - 1)  # r - 1 per repeat
    assert counts.min() >= CONFIG.min_segment - 1 and counts.max() <= CONFIG.max_segment - 1
    assert len(counts.unique()) > 3
    masks = mixed.late_masks(data, CONFIG)
    assert masks["repeated"].any(dim=1).float().mean() > 0.9
    assert masks["non-repeated"].any(dim=1).all()
    early = torch.zeros_like(data.unigram)
    early[:, CONFIG.early] = True
    assert data.unigram[early].all(), "the early term scores unigram draws only"


def test_seeds_reproduce_and_differ():
    a = mixed.mixed_sequences(8, seeded_generator(5), CONFIG)
    b = mixed.mixed_sequences(8, seeded_generator(5), CONFIG)
    c = mixed.mixed_sequences(8, seeded_generator(6), CONFIG)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a.tokens, c.tokens)
    assert torch.equal(mixed.eval_batch(CONFIG, n=8).tokens, mixed.eval_batch(CONFIG, n=8).tokens)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seq_len": 40}, "too short"),
        ({"support": 55}, "too small"),
        ({"min_segment": 1}, "min_segment"),
        ({"min_segment": 9, "max_segment": 8}, "must be <="),
        ({"min_stretch": 1}, "min_stretch"),
        ({"support": 0}, "support"),
        ({"copies": 1}, "copies"),
    ],
)
def test_bad_config(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mixed.MixedConfig(**kwargs)


def test_bad_batch():
    with pytest.raises(ValueError, match="batch"):
        mixed.mixed_sequences(0, seeded_generator(0), CONFIG)


def test_icl_by_kind_separates_the_two_kinds(data):
    """A loss that is low only at repeats shows ICL on repeated positions and none on the others."""
    loss = torch.full(data.repeated.shape, 3.0)
    loss[data.repeated] = 0.5
    icl = mixed.icl_by_kind(loss, data, CONFIG)
    assert icl["repeated"].item() == pytest.approx(-2.5)
    assert icl["non-repeated"].item() == pytest.approx(0.0)
    terms = mixed.loss_terms(loss, data, CONFIG)
    assert {k: round(v.item(), 4) for k, v in terms.items()} == {"early": 3.0, "repeated": 0.5, "non-repeated": 3.0}
    stacked = mixed.icl_by_kind(torch.stack([loss, loss + 1]), data, CONFIG)
    assert stacked["repeated"].shape == (2,)
    clean = {"repeated": torch.tensor(-2.0), "non-repeated": torch.tensor(-1.0)}
    shares = mixed.shares_removed(clean, {"repeated": torch.tensor(-0.5), "non-repeated": torch.tensor(-1.0)})
    assert shares["repeated"].item() == pytest.approx(0.75) and shares["non-repeated"].item() == pytest.approx(0.0)
    with pytest.raises(ValueError, match="does not match"):
        mixed.icl_by_kind(loss[:, :-1], data, CONFIG)
    with pytest.raises(ValueError, match="does not match"):
        mixed.loss_terms(loss[:, :-1], data, CONFIG)


SMALL = mixed.MixedConfig(vocab=24, seq_len=29, support=4, min_segment=3, max_segment=5, min_stretch=2, max_stretch=3)


@pytest.fixture(scope="module")
def small_model():
    from lib.induction import models

    config = SMALL.model_config(n_heads=4)
    assert (config.n_heads, config.vocab, config.seq_len) == (4, SMALL.vocab, SMALL.seq_len)
    model = models.make_model(config, seed=1)
    model.eval()
    return model


def test_same_layer_controls(small_model):
    controls = mixed.same_layer_controls(small_model, [(1, 0), (1, 2)])
    assert controls == [[(1, 1), (1, 3)]]
    assert len(mixed.same_layer_controls(small_model, [(1, 3)])) == 3
    with pytest.raises(ValueError, match="one layer"):
        mixed.same_layer_controls(small_model, [(0, 0), (1, 0)])
    with pytest.raises(ValueError, match="too few"):
        mixed.same_layer_controls(small_model, [(1, 0), (1, 1), (1, 2)])


@pytest.mark.parametrize("replacement", ["zero", "mean", "resample"])
def test_ablation_contrast_matches_one_ablation_at_a_time(small_model, replacement):
    from lib.induction import ablation

    data = mixed.mixed_sequences(16, seeded_generator(2), SMALL)
    contrast = mixed.ablation_contrast(small_model, data, [(1, 1)], replacement, config=SMALL)
    assert contrast.controls["repeated"].shape == (3,)
    clean = mixed.icl_by_kind(ablation.ablated_loss(small_model, data.tokens), data, SMALL)
    for heads, got in [([(1, 1)], {k: v for k, v in contrast.heads.items()})] + [
        ([(1, h)], {k: v[i] for k, v in contrast.controls.items()}) for i, h in enumerate([0, 2, 3])
    ]:
        loss = ablation.ablated_loss(small_model, data.tokens, heads, replacement=replacement)
        expected = mixed.shares_removed(clean, mixed.icl_by_kind(loss, data, SMALL))
        for kind in mixed.POSITION_KINDS:
            assert torch.allclose(got[kind], expected[kind], atol=1e-4)


def test_run_round_trip_and_the_shipped_run(small_model, tmp_path):
    state = {k: v.detach().clone() for k, v in small_model.state_dict().items()}
    run = mixed.Run(SMALL, 4, 1, 1.5, {0: state, 10: state})
    mixed.save_run(tmp_path / "run.pt", run)
    loaded = mixed.load_run(tmp_path / "run.pt")
    assert (loaded.config, loaded.n_heads, loaded.seed, sorted(loaded.checkpoints)) == (SMALL, 4, 1, [0, 10])
    tokens = mixed.mixed_sequences(2, seeded_generator(0), SMALL).tokens
    with torch.inference_mode():
        assert torch.allclose(loaded.model_at(10)(tokens), small_model(tokens), atol=0.05), "float16 weights"
    with pytest.raises(ValueError, match="no checkpoint at step 5"):
        loaded.model_at(5)
    shipped = mixed.load_run()
    assert shipped.config == mixed.MixedConfig() and shipped.n_heads == 8
    assert sorted(shipped.checkpoints) == list(mixed.TRAINING.checkpoint_steps)
    assert mixed.SHIPPED == mixed.run_path(shipped.seed)


def test_train_model_one_layer_smeared_and_icl_of():
    """Chapter 6's one-layer models on the mixed task: the smear attached and trained where asked; icl_of is
    icl_by_kind of the model's loss, as floats."""
    from dataclasses import replace

    from lib.induction import ablation, smear

    short = replace(mixed.TRAINING, steps=3, checkpoint_steps=(0, 3), progress=False)
    data = mixed.mixed_sequences(8, seeded_generator(3), SMALL)
    runs = {
        smeared: mixed.train_model(
            SMALL,
            2,
            n_heads=2,
            n_layers=1,
            smeared=smeared,
            train_config=short,
            evaluate=lambda m: mixed.icl_of(m, data, SMALL),
        )
        for smeared in (False, True)
    }
    (plain, plain_history), (smeared_model, history) = runs[False], runs[True]
    assert plain.cfg.n_layers == 1 and plain.cfg.n_heads == 2
    assert smear.smear_of(plain) is None and smear.smear_of(smeared_model) is not None
    assert smear.smear_sigma(smeared_model).shape == (1, 2)
    assert not torch.allclose(smear.smear_sigma(smeared_model), torch.tensor(0.5)), "the smear was trained"
    assert set(history.evals) == set(plain_history.evals) == {0, 3}
    expected = mixed.icl_by_kind(ablation.ablated_loss(smeared_model, data.tokens), data, SMALL)
    got = mixed.icl_of(smeared_model, data, SMALL)
    assert set(got) == set(mixed.POSITION_KINDS) and all(isinstance(v, float) for v in got.values())
    assert all(got[k] == pytest.approx(expected[k].item(), abs=1e-5) for k in got)


def test_shipped_dating_matches_the_shipped_run():
    """lib/data/mixed_dating.json's seed 1 is :func:`mixed.dating_curves` of the shipped run on the book's sets."""
    from lib.induction import sequences

    steps, runs = mixed.load_dating()
    assert sorted(runs) == [0, 1, 2] and steps == list(range(0, 1501, 100))
    data = mixed.eval_batch(CONFIG, "cpu", n=128)
    prefix = sequences.eval_sets(CONFIG.model_config(8), "cpu").prefix_tokens[:64]
    got_steps, curves, pair = mixed.dating_curves(mixed.load_run(), data, prefix)
    assert got_steps == steps and torch.equal(pair, runs[1][0])
    for name in mixed.DATING_CURVES:
        torch.testing.assert_close(curves[name], runs[1][1][name], atol=1e-4, rtol=0)
