"""lib.induction.fuzzy: the two-language task, its masks, the cross-language prefix-matching score, the OV shares,
bad configs, and the shipped runs."""

import math

import pytest
import torch

from lib.core.tokens import BOS
from lib.induction import fuzzy, models, scores
from lib.induction.sequences import seeded_generator

SMALL = fuzzy.FuzzyConfig(language=6, d_model=16, d_head=4, n_heads=2, seq_len=13, min_repeat=2, max_repeat=6)
TRANSLATE = fuzzy.translation(SMALL.language)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"language": 1}, "language"),
        ({"max_repeat": 40}, "language=32 is too small"),
        ({"translated_share": 1.5}, r"translated_share must be a number in \[0, 1\]"),
        ({"translated_share": "half"}, "translated_share"),
        ({"seq_len": 20}, "max_repeat=24 is too long"),
    ],
)
def test_bad_configs_say_what_is_wrong(changes, message):
    with pytest.raises(ValueError, match=message):
        fuzzy.FuzzyConfig(**changes)


def test_the_translation_is_an_involution_between_the_two_languages():
    translate = fuzzy.translation(32)
    assert translate.shape == (65,) and translate[BOS] == BOS
    assert torch.equal(translate[translate], torch.arange(65))
    first = torch.arange(1, 33)
    assert ((translate[first] > 32) & (translate[first] <= 64)).all()
    assert torch.equal(translate, fuzzy.translation(32)), "fixed by the task, not drawn anew"
    assert not torch.equal(translate, fuzzy.translation(32, seed=1))


def test_translated_and_exact_repeats():
    tokens, period, translated = fuzzy.fuzzy_sequences(64, seeded_generator(0), SMALL)
    assert tokens.shape == (64, SMALL.seq_len) and (tokens[:, 0] == BOS).all()
    assert period.min() >= SMALL.min_repeat and period.max() <= SMALL.max_repeat
    assert 0 < translated.sum() < 64
    for row, p, kind in zip(tokens, period.tolist(), translated.tolist()):
        body = row[1:]
        first = body[:p]
        assert len(first.unique()) == p, "a segment's tokens are distinct"
        assert (first <= SMALL.language).all() or (first > SMALL.language).all(), "and of one language"
        for i in range(p, len(body)):
            before = body[i - p]
            assert body[i] == (TRANSLATE[before] if kind else before)


def test_every_sequence_of_one_kind_when_asked():
    for kind in (True, False):
        _, _, translated = fuzzy.fuzzy_sequences(16, seeded_generator(1), SMALL, translated=kind)
        assert (translated == kind).all()


def test_repeat_masks_by_hand():
    a, b, c = 1, 2, 3
    ta, tb, tc = (TRANSLATE[t].item() for t in (a, b, c))
    tokens = torch.tensor([[BOS, a, b, c, ta, tb, tc, a, b]])
    exact, translated = fuzzy.repeat_masks(tokens, TRANSLATE)
    # position p predicts tokens[p + 1] from tokens[p]
    assert translated[0].tolist() == [False, False, False, False, True, True, True, False]
    assert exact[0].tolist() == [False] * 7 + [True]


def test_cross_prefix_matching_score_of_a_perfect_fuzzy_head_and_of_an_exact_one():
    tokens = fuzzy.fuzzy_sequences(8, seeded_generator(2), SMALL, translated=True)[0]
    fuzzy_mask = fuzzy.cross_prefix_matching_mask(tokens, TRANSLATE).float()
    exact_mask = scores.prefix_matching_mask(tokens).float()
    bos = torch.zeros_like(fuzzy_mask)
    bos[..., 0] = 1.0

    def pattern(mask):  # all attention on the keys the mask names, else on BOS
        weights = torch.where(mask.sum(-1, keepdim=True) > 0, mask, bos)
        return (weights / weights.sum(-1, keepdim=True))[:, None]  # (batch, 1 head, q, k)

    perfect = fuzzy.cross_prefix_matching_score(pattern(fuzzy_mask), tokens, TRANSLATE)
    exact = fuzzy.cross_prefix_matching_score(pattern(exact_mask), tokens, TRANSLATE)
    assert perfect.shape == (1,) and math.isclose(perfect.item(), 1.0, abs_tol=1e-6)
    assert exact.item() == 0.0, "the queries scored have no exact earlier occurrence"
    assert scores.prefix_matching_score(pattern(fuzzy_mask), tokens).item() < 0.5


def test_cross_prefix_matching_score_needs_a_translated_match():
    tokens = fuzzy.fuzzy_sequences(4, seeded_generator(3), SMALL, translated=False)[0]
    pattern = torch.full((4, 1, SMALL.seq_len, SMALL.seq_len), 1.0 / SMALL.seq_len)
    with pytest.raises(ValueError, match="the score is undefined"):
        fuzzy.cross_prefix_matching_score(pattern, tokens, TRANSLATE)
    with pytest.raises(ValueError, match="does not match tokens"):
        fuzzy.cross_prefix_matching_score(pattern[:2], tokens, TRANSLATE)


def test_ov_top_shares_read_the_largest_logit(monkeypatch):
    vocab = SMALL.vocab
    translation_map = torch.eye(vocab)[TRANSLATE]  # row s: one-hot at translate[s]
    for circuit, expected in ((translation_map, (1.0, 0.0)), (torch.eye(vocab), (0.0, 1.0))):
        monkeypatch.setattr(fuzzy, "full_ov_circuit", lambda model, head, c=circuit: c)
        assert fuzzy.ov_top_shares(None, (1, 0), TRANSLATE) == expected  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one entry per token"):
        fuzzy.ov_top_shares(None, (1, 0), TRANSLATE[:-1])  # type: ignore[arg-type]


def test_measures_of_a_fresh_model_are_at_chance():
    model = models.make_model(SMALL.induction, seed=0)
    sets = fuzzy.eval_sets(SMALL, n=32)
    measures = fuzzy.head_measures(model, sets, TRANSLATE)
    assert measures["cross prefix matching"].shape == (2, 2)
    assert measures["cross prefix matching"].max() < 0.5
    assert abs(measures["translated loss"].item() - math.log(SMALL.vocab)) < 1.0
    shares = fuzzy.ov_shares(model, TRANSLATE)
    assert shares.shape == (2, 2, 2) and ((0 <= shares) & (shares <= 1)).all()
    effects = fuzzy.ablation_effects(model, sets)
    assert effects.shape == (1 + 4, 2)


def test_eval_sets_are_fixed_and_hold_both_kinds():
    first, second = fuzzy.eval_sets(SMALL, n=16), fuzzy.eval_sets(SMALL, n=16)
    assert all(torch.equal(x, y) for x, y in zip(first, second))
    assert first.exact.any() and first.translated.any() and not (first.exact & first.translated).any()
    assert fuzzy.repeat_masks(first.cross_prefix, TRANSLATE)[1].any(dim=1).all()


def test_runs_round_trip(tmp_path):
    model = models.make_model(SMALL.induction, seed=3)
    run = fuzzy.Run(SMALL, 3, {0: model.state_dict()})
    path = tmp_path / "runs.pt"
    fuzzy.save_runs(path, {"fuzzy": run})
    loaded = fuzzy.load_runs(path)["fuzzy"]
    assert loaded.config == SMALL and loaded.seed == 3
    again = loaded.model_at(0)
    tokens = fuzzy.eval_sets(SMALL, n=4).tokens
    torch.testing.assert_close(again(tokens), model(tokens), atol=0.05, rtol=0.05)  # float16 weights
    with pytest.raises(ValueError, match="no checkpoint at step 5"):
        loaded.model_at(5)
    with pytest.raises(ValueError, match="bench/fuzzy_train.py"):
        fuzzy.load_runs(tmp_path / "missing.pt")
