from types import SimpleNamespace

import pytest
import torch

from lib.induction import dynamics, scores
from lib.induction.handbuilt import hand_built_model


def one_hot_pattern(seq, targets):
    """(1, 1, seq, seq) attention with query i entirely on key targets[i]."""
    p = torch.zeros(1, 1, seq, seq)
    for i, j in enumerate(targets):
        p[0, 0, i, j] = 1.0
    return p


def test_prefix_matching_exact():
    tokens = torch.tensor([[0, 5, 6, 5, 6, 5]])
    # queries with an earlier occurrence: i=3 (5: targets j=2), i=4 (6: j=3), i=5 (5: j=2 and j=4)
    perfect = one_hot_pattern(6, [0, 0, 1, 2, 3, 4])
    assert scores.prefix_matching_score(perfect, tokens).item() == pytest.approx(1.0)
    self_attention = one_hot_pattern(6, range(6))
    assert scores.prefix_matching_score(self_attention, tokens).item() == pytest.approx(0.0)
    half = 0.5 * perfect + 0.5 * self_attention
    assert scores.prefix_matching_score(half, tokens).item() == pytest.approx(0.5)
    mixed = one_hot_pattern(6, [0, 0, 1, 2, 0, 2])  # right, wrong, right
    assert scores.prefix_matching_score(mixed, tokens).item() == pytest.approx(2 / 3)


def test_prefix_matching_needs_a_repeat_and_matching_shapes():
    with pytest.raises(ValueError, match="occurs twice"):
        scores.prefix_matching_score(one_hot_pattern(3, [0, 0, 1]), torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match="do not match"):
        scores.prefix_matching_score(one_hot_pattern(3, [0, 0, 1]), torch.tensor([[0, 1, 2, 1]]))


def test_previous_token_exact():
    assert scores.previous_token_score(one_hot_pattern(5, [0, 0, 1, 2, 3])).item() == pytest.approx(1.0)
    uniform = torch.ones(5, 5).tril()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None, None]
    assert scores.previous_token_score(uniform).item() == pytest.approx(sum(1 / (i + 1) for i in range(1, 5)) / 4)
    stacked = torch.stack([one_hot_pattern(5, [0, 0, 1, 2, 3]), one_hot_pattern(5, range(5))])  # (layers, b, h, q, k)
    assert torch.allclose(scores.previous_token_score(stacked), torch.tensor([[1.0], [0.0]]))


def fake_model(ov_sign):
    """Two heads on a 4-token vocabulary: head 0 has OV = ov_sign * identity, head 1 writes nothing."""
    eye = torch.eye(4)
    W_V = torch.stack([eye, torch.zeros(4, 4)])[None]  # (1 layer, 2 heads, d_model, d_head)
    W_O = torch.stack([ov_sign * eye, eye])[None]
    return SimpleNamespace(W_E=eye, W_V=W_V, W_O=W_O, W_U=eye)


def test_copying_score_sign_and_range():
    tokens = torch.tensor([0, 1, 2, 3])
    assert scores.copying_score(fake_model(1.0), tokens)[0, 0].item() == pytest.approx(1.0)
    assert scores.copying_score(fake_model(-1.0), tokens)[0, 0].item() == pytest.approx(-1.0)
    assert scores.copying_score(fake_model(1.0), tokens)[0, 1].item() == 0.0
    with pytest.raises(ValueError, match=r"tokens must be a \(n,\) int64 tensor, got shape \(1, 4\)"):
        scores.copying_score(fake_model(1.0), tokens[None])


# Issue 37: bad input on the learner's path. Each is a ValueError that names the value and what is allowed,
# where torch raised IndexError ("index out of range in self"), a reshape RuntimeError, or a misleading message.
INTS = dict(dtype=torch.int64)


@pytest.fixture(scope="module")
def hand():
    return hand_built_model(32, 45)  # d_vocab 32


@pytest.mark.parametrize(
    "tokens, message",
    [
        (torch.tensor([[0, 5, 32, 7]]), r"tokens must be token ids in \[0, 31\], got 32"),  # one past the vocabulary
        (torch.tensor([[0, 5, -1, 7]]), r"tokens must be token ids in \[0, 31\], got -1"),
        (
            torch.tensor([[0.0, 5.0, 6.0]]),
            r"tokens must be a \(batch, seq\) int64 tensor, got shape \(1, 3\) torch.float32",
        ),
        (torch.tensor([0, 5, 6]), r"tokens must be a \(batch, seq\) int64 tensor, got shape \(3,\) torch.int64"),
        (torch.zeros(0, 12, **INTS), r"tokens must hold at least one token id, got shape \(0, 12\)"),  # empty batch
        (torch.zeros(2, 1, **INTS), r"positions in tokens must be an integer >= 2 \(a token and the next one\), got 1"),
    ],
)
def test_per_token_loss_names_bad_tokens(hand, tokens, message):
    with pytest.raises(ValueError, match=message):
        scores.per_token_loss(hand, tokens)


def test_training_skips_only_the_id_range_check(hand, monkeypatch):
    """check_ids=False (lib's training loss) reads nothing back from the device; shapes are still checked."""
    from lib.core import validate
    from lib.induction import models

    tokens = torch.tensor([[0, 5, 6, 7], [0, 1, 2, 3]])
    checked = scores.per_token_loss(hand, tokens)
    monkeypatch.setattr(validate, "token_range", lambda *a: pytest.fail("read back the ids"))
    assert torch.equal(scores.per_token_loss(hand, tokens, check_ids=False), checked)
    assert torch.equal(models.training_loss(hand, tokens), checked.mean())
    with pytest.raises(ValueError, match="int64 tensor"):
        scores.per_token_loss(hand, tokens.float(), check_ids=False)


def test_next_token_loss_and_prediction_shares_name_bad_tokens():
    logits = torch.zeros(1, 4, 10)
    mask = torch.ones(1, 3, dtype=torch.bool)
    for bad in (torch.tensor([[0, 1, 10, 2]]), torch.tensor([[0, 1, -3, 2]])):
        with pytest.raises(ValueError, match=r"tokens must be token ids in \[0, 9\], got (10|-3)"):
            scores.next_token_loss(logits, bad)
        with pytest.raises(ValueError, match=r"tokens must be token ids in \[0, 9\], got (10|-3)"):
            scores.prediction_shares(logits, bad, mask)
    with pytest.raises(ValueError, match=r"int64 tensor, got shape \(1, 4\) torch.float32"):
        scores.prediction_shares(logits, torch.zeros(1, 4), mask)  # would compare floats with the argmax ids
    with pytest.raises(ValueError, match=r"at least one token id, got shape \(0, 4\)"):
        scores.next_token_loss(torch.zeros(0, 4, 10), torch.zeros(0, 4, **INTS))


def test_pattern_scores_name_bad_tokens_and_patterns():
    perfect = one_hot_pattern(6, [0, 0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"int64 tensor, got shape \(1, 6\) torch.float32"):
        scores.prefix_matching_score(perfect, torch.tensor([[0.0, 5, 6, 5, 6, 5]]))  # not "no token occurs twice"
    with pytest.raises(ValueError, match=r"at least one token id, got shape \(0, 6\)"):
        scores.prefix_matching_score(perfect[:0], torch.zeros(0, 6, **INTS))
    with pytest.raises(ValueError, match=r"int64 tensor, got shape \(6,\)"):
        scores.prefix_matching_mask(torch.tensor([0, 5, 6, 5, 6, 5]))
    for score in (scores.previous_token_score, lambda p: scores.prefix_matching_score(p, torch.zeros(1, 6, **INTS))):
        with pytest.raises(ValueError, match=r"pattern must be a float tensor \(\.\.\., batch, heads, query, key\)"):
            score(perfect.long())  # integer attention
        with pytest.raises(ValueError, match=r"pattern must be a float tensor .*, got shape \(6, 6\)"):
            score(perfect[0, 0])  # one head's (query, key) pattern, without its batch and head axes
    with pytest.raises(ValueError, match=r"pattern must have at least one entry, got shape \(0, 1, 6, 6\)"):
        scores.previous_token_score(perfect[:0])  # the mean of nothing: nan before


def test_copying_and_patterns_name_tokens_outside_the_model(hand):
    with pytest.raises(ValueError, match=r"tokens must be token ids in \[0, 3\], got 4"):
        scores.copying_score(fake_model(1.0), torch.tensor([0, 4]))
    with pytest.raises(ValueError, match=r"tokens must be a \(n,\) int64 tensor, got shape \(2,\) torch.float32"):
        scores.copying_score(fake_model(1.0), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"at least one token id, got shape \(0,\)"):
        scores.copying_score(fake_model(1.0), torch.zeros(0, **INTS))
    with pytest.raises(ValueError, match=r"tokens must be token ids in \[0, 31\], got 40"):
        scores.attention_patterns(hand, torch.tensor([[0, 40]]))


def test_loss_scores_name_a_loss_that_is_no_float_tensor():
    for bad, got in ((torch.ones(2, 5, **INTS), r"shape \(2, 5\) torch.int64"), ([1.0, 2.0], "list")):
        with pytest.raises(ValueError, match=rf"loss must be a float tensor .*, got {got}"):
            scores.icl_score(bad, 0, 3)
    with pytest.raises(ValueError, match=r"loss must have at least one entry, got shape \(0, 5\)"):
        scores.icl_score(torch.ones(0, 5), 0, 3)  # an empty batch: the mean of nothing
    with pytest.raises(ValueError, match=r"loss must be a float tensor \(\.\.\., batch, seq - 1\), got shape \(5,\)"):
        scores.masked_mean(torch.ones(5), torch.ones(5, dtype=torch.bool))


def test_icl_score_sign_convention():
    falling = torch.tensor([[4.0, 3.0, 2.0, 0.5]])
    assert scores.icl_score(falling, 0, 3).item() == pytest.approx(-3.5)  # negative = in-context learning
    assert scores.icl_score(torch.tensor([1.0, 2.0, 3.0]), 0, 2).item() == pytest.approx(2.0)
    stacked = torch.stack([falling, falling.flip(-1)])  # (checkpoints, batch, positions)
    assert torch.allclose(scores.icl_score(stacked, 0, 3), torch.tensor([-3.5, 3.5]))
    with pytest.raises(ValueError, match="early must lie before late"):
        scores.icl_score(falling, 3, 0)
    with pytest.raises(ValueError, match="late must be an integer in \\[0, 3\\], got 4"):
        scores.icl_score(falling, 0, 4)
    with pytest.raises(ValueError, match="early must be"):
        scores.icl_score(falling, 0.0, 3)


def test_icl_score_over_bands_is_the_mean_of_each_band():
    loss = torch.tensor([[4.0, 2.0, 9.0, 1.0, 3.0], [2.0, 2.0, 9.0, 3.0, 3.0]])
    per_sequence = scores.icl_per_sequence(loss, range(0, 2), range(3, 5))
    assert per_sequence.tolist() == pytest.approx([2.0 - 3.0, 3.0 - 2.0])
    assert scores.icl_score(loss, range(0, 2), range(3, 5)).item() == pytest.approx(0.0)
    assert scores.icl_score(loss, 0, 4).item() == pytest.approx(scores.icl_score(loss, range(0, 1), range(4, 5)).item())
    for early, late in ((range(0, 3), range(2, 5)), (range(0, 0), 4), (range(0, 4, 2), 4), (0, range(3, 6))):
        with pytest.raises(ValueError, match="early|late"):
            scores.icl_score(loss, early, late)


def test_icl_positions_are_the_second_and_the_last_prediction():
    assert scores.icl_positions(49) == (1, 47)  # predicting the 2nd and the 48th (last) token
    assert scores.icl_positions(4) == (1, 2)
    with pytest.raises(ValueError, match="seq_len must be an integer >= 4"):
        scores.icl_positions(3)


def test_masked_mean_matches_indexing_each_loss_matrix():
    g = torch.Generator().manual_seed(0)
    loss = torch.rand(3, 2, 4, 6, generator=g)  # (checkpoints, ablations, batch, seq - 1)
    mask = torch.rand(4, 6, generator=g) > 0.5
    got = scores.masked_mean(loss, mask)
    assert got.shape == (3, 2)
    expected = torch.stack([torch.stack([m[mask].mean() for m in row]) for row in loss])
    assert torch.equal(got, expected)
    assert torch.equal(scores.masked_mean(loss[0, 0], ~mask), loss[0, 0][~mask].mean())
    with pytest.raises(ValueError, match="bool"):
        scores.masked_mean(loss, mask.float())
    with pytest.raises(ValueError, match="last two axes"):
        scores.masked_mean(loss, mask[:, :5])
    with pytest.raises(ValueError, match="no entry"):
        scores.masked_mean(loss, torch.zeros(4, 6, dtype=torch.bool))


def test_phase_change_window():
    steps = list(range(0, 110, 10))
    loss = [4.0, 3.9, 3.5, 3.1, 2.9, 2.0, 0.6, 0.35, 0.1, 0.0, 0.0]
    # the last checkpoint >= 3 nats before the step below 1 nat (60), to the first below 0.3 nats
    assert dynamics.phase_change_window(steps, loss) == (30, 80)
    assert dynamics.phase_change_window(steps, torch.tensor(loss)) == (30, 80)
    assert dynamics.phase_change_step(steps, loss) == 60
    # absolute levels: what happens after the drop does not move the window
    assert dynamics.phase_change_window(steps + [110, 120], loss + [0.0, 0.0]) == (30, 80)
    # a run that ends before the loss is below 0.3 nats: the window closes at the last checkpoint
    assert dynamics.phase_change_window(steps[:8], loss[:8]) == (30, 70)
    # no checkpoint above 3 nats before the step: the window opens at the first checkpoint
    assert dynamics.phase_change_window([0, 10, 20], [2.5, 0.9, 0.2]) == (0, 20)
    with pytest.raises(ValueError, match="no phase change"):
        dynamics.phase_change_window(
            steps, [4.0 - 0.1 * i for i in range(11)]
        )  # creeps down to 3 nats: no phase change
    with pytest.raises(ValueError, match="upper > 1.0 > lower > 0"):
        dynamics.phase_change_window(steps, loss, band=(0.5, 0.1))
    with pytest.raises(ValueError, match="at least 2"):
        dynamics.phase_change_window([0], [1.0])


def test_phase_change_step():
    assert dynamics.phase_change_step([0, 10, 20, 30], [3.0, 1.2, 0.9, 0.1]) == 20
    assert dynamics.phase_change_step([0, 10], [3.0, 2.0]) is None
    assert dynamics.phase_change_step([0, 10], torch.tensor([3.0, 0.5]), threshold=0.4) is None
    assert dynamics.PHASE_CHANGE_LOSS == 1.0
    upper, lower = dynamics.PHASE_CHANGE_BAND
    assert upper > dynamics.PHASE_CHANGE_LOSS > lower > 0
    with pytest.raises(ValueError):
        dynamics.phase_change_step([0, 10], [1.0])
    with pytest.raises(ValueError):
        dynamics.phase_change_step([], [])
    with pytest.raises(ValueError):
        dynamics.phase_change_step([0], [1.0], threshold=0)


def test_half_change_step_dates_falling_and_rising_curves():
    steps = [0, 10, 20, 30, 40]
    assert dynamics.half_change_step(steps, [4.0, 3.9, 2.0, 0.5, 0.0]) == 20  # half way: 2.0 (reached at 20)
    assert dynamics.half_change_step(steps, [4.0, 3.9, 2.1, 0.5, 0.0]) == 30
    assert dynamics.half_change_step(steps, torch.tensor([0.1, 0.1, 0.2, 0.9, 0.9])) == 30  # rising: half way 0.5
    assert dynamics.half_change_step(steps, [-0.1, -0.3, -2.5, -4.0, -4.1]) == 20
    with pytest.raises(ValueError, match="no change"):
        dynamics.half_change_step(steps, [1.0, 2.0, 0.0, 3.0, 1.0])


def test_mean_before_averages_the_steps_up_to_each_checkpoint():
    per_step = torch.arange(1.0, 31.0)  # entry t is the loss at step t + 1: 1, 2, ..., 30
    got = dynamics.mean_before([0, 10, 20, 30], per_step, span=10)
    assert got.tolist() == pytest.approx([1.0, 5.5, 15.5, 25.5])
    assert dynamics.mean_before([5], per_step, span=10).tolist() == pytest.approx([3.0])  # steps 1-5 only
    with pytest.raises(ValueError, match="a checkpoint step"):
        dynamics.mean_before([31], per_step, span=10)
    with pytest.raises(ValueError, match="span"):
        dynamics.mean_before([10], per_step, span=0)


def test_turning_angle():
    # along x, then a right-angle turn at point 3, then along y
    path = torch.tensor([[0.0, 0.0], [1, 0], [2, 0], [3, 0], [3, 1], [3, 2], [3, 3]])
    angle = dynamics.turning_angle(path)
    assert angle[3].item() == pytest.approx(90.0)
    assert angle[[1, 2, 4, 5]].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0], abs=1e-3)
    assert angle[0].isnan() and angle[-1].isnan()
    smooth = dynamics.turning_angle(path, lag=2)  # spans two points: from (1, 0) via (3, 0) to (3, 2)
    assert smooth[3].item() == pytest.approx(90.0) and smooth[2].item() == pytest.approx(45.0)
    back = dynamics.turning_angle(torch.tensor([[0.0], [1.0], [0.0]]))
    assert back[1].item() == pytest.approx(180.0)
    still = dynamics.turning_angle(torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]))
    assert still[1].isnan()
    with pytest.raises(ValueError, match="coords"):
        dynamics.turning_angle(torch.zeros(5))


def test_one_token_per_sequence_picks_one_loss_per_row():
    loss = torch.arange(24.0).view(2, 3, 4)  # (checkpoints, batch, seq - 1)
    picked, positions = dynamics.one_token_per_sequence(loss, seed=0)
    assert picked.shape == (2, 3) and positions.shape == (3,)
    for b, p in enumerate(positions.tolist()):
        assert picked[:, b].tolist() == loss[:, b, p].tolist()  # the same position at every checkpoint
    again, same = dynamics.one_token_per_sequence(loss, seed=0)
    assert torch.equal(again, picked) and torch.equal(same, positions)
    many = dynamics.one_token_per_sequence(torch.zeros(1, 4000, 48), seed=1)[1]
    assert len(set(many.tolist())) == 48, "every position can be drawn"
    with pytest.raises(ValueError, match="batch, seq - 1"):
        dynamics.one_token_per_sequence(torch.zeros(5), seed=0)


def test_a_positional_head_scores_low_on_the_prefix_set():
    """A head attending 10, 21, 32 and 43 tokens back matches every target of a period-11 repeat, without
    looking at any token. On the book's prefix-matching set (periods 5 to 12) it must score low."""
    from lib.induction.sequences import InductionConfig, prefix_matching_tokens, repeated_sequences, seeded_generator

    config = InductionConfig()
    seq = config.seq_len

    def positional(offsets):  # (1, 1, seq, seq): each query spread over the offsets that reach a key with a
        pattern = torch.zeros(1, 1, seq, seq)  # content token before it (position >= 2), else on BOS
        for i in range(seq):
            keys = [i - d for d in offsets if i - d >= 2] or [0]
            pattern[0, 0, i, keys] = 1 / len(keys)
        return pattern

    old_targets = positional([10, 21, 32, 43])
    fixed = repeated_sequences(64, seeded_generator(0), InductionConfig(min_repeat=11, max_repeat=11))[0]
    assert scores.prefix_matching_score(old_targets.expand(64, -1, -1, -1), fixed).item() == pytest.approx(1.0)
    prefix = prefix_matching_tokens(512, seeded_generator(0), config)
    assert scores.prefix_matching_score(old_targets.expand(512, -1, -1, -1), prefix).item() < 0.2
    best_offset = max(
        scores.prefix_matching_score(positional([d]).expand(512, -1, -1, -1), prefix).item() for d in range(1, seq)
    )
    assert best_offset < 0.3, "no single fixed offset may pass for an induction head"
    # an induction pattern (every target of every earlier occurrence) still scores 1
    mask = scores.prefix_matching_mask(prefix).float()
    perfect = mask / mask.sum(-1, keepdim=True).clamp_min(1)
    perfect[:, :, 0] += mask.sum(-1) == 0  # queries with no earlier occurrence rest on BOS
    assert scores.prefix_matching_score(perfect[:, None], prefix).item() == pytest.approx(1.0)


def test_window_middle_is_the_nearest_checkpoint():
    steps = list(range(0, 110, 10))
    assert dynamics.window_middle(steps, (40, 70)) == 50  # 55 is as near 50 as 60: the earlier one
    assert dynamics.window_middle(steps, (40, 80)) == 60
    assert dynamics.window_middle([0, 20, 40], (10, 12)) == 20


def test_pca_and_classifier():
    direction = torch.tensor([1.0, 2.0, 2.0]) / 3
    matrix = torch.arange(5.0)[:, None] * direction[None]
    coords, explained = dynamics.pca(matrix, k=1)
    assert explained[0].item() == pytest.approx(1.0)
    assert torch.allclose(coords[:, 0].abs(), (torch.arange(5.0) - 2).abs(), atol=1e-5)
    got = scores.is_induction_head(torch.tensor([0.9, 0.9, 0.9, 0.5]), torch.tensor([0.5, 0.3, -0.1, 0.9]))
    assert got.tolist() == [True, False, False, False]  # 0.3: positive copying, but within random heads' range
    with pytest.raises(ValueError, match="threshold"):
        scores.is_induction_head(torch.ones(1), torch.ones(1), threshold=0.0)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        dynamics.pca(matrix, k=0)
    with pytest.raises(ValueError, match="k <= min"):
        dynamics.pca(matrix, k=4)


def test_induction_heads_lists_the_classified_heads_layer_by_layer():
    by_head = {
        "prefix matching": torch.tensor([[0.9, 0.2, 0.8], [0.76, 0.75, 0.99]]),
        "copying": torch.tensor([[0.6, 0.9, -0.2], [0.5, 0.99, 0.7]]),
        "previous token": torch.zeros(2, 3),
    }
    assert scores.induction_heads(by_head) == [(0, 0), (1, 0), (1, 1), (1, 2)]
    assert scores.induction_heads(by_head, threshold=0.8) == [(0, 0), (1, 2)]
    assert scores.induction_heads(by_head, copying_threshold=0.65) == [(1, 1), (1, 2)]
    assert all(isinstance(i, int) for head in scores.induction_heads(by_head) for i in head)
    none = {**by_head, "copying": -by_head["copying"].abs()}
    assert scores.induction_heads(none) == []
    with pytest.raises(ValueError, match="n_layers, n_heads"):
        scores.induction_heads({"prefix matching": torch.ones(3), "copying": torch.ones(3)})
    with pytest.raises(ValueError, match="copying_threshold must be in \\(0, 1\\], got 0.0"):
        scores.induction_heads(by_head, copying_threshold=0.0)


def test_positive_copying_below_the_threshold_is_not_enough():
    """Random heads score up to about 0.3 (half of them above 0): such a head is not an induction head."""
    by_head = {
        "prefix matching": torch.tensor([[0.9, 0.9]]),
        "copying": torch.tensor([[0.3, scores.COPYING_THRESHOLD]]),
    }
    assert scores.induction_heads(by_head) == [(0, 1)]


def test_hand_built_scores():
    model = hand_built_model(32, 45)
    from lib.induction.models import config_of
    from lib.induction.sequences import prefix_matching_tokens, repeated_sequences, seeded_generator

    config = config_of(model)
    g = seeded_generator(0)
    by_head = scores.head_scores(
        model, prefix_matching_tokens(16, g, config), repeated_sequences(16, g, config)[0], torch.arange(1, 26)
    )
    assert by_head["prefix matching"][1, 0] > 0.99 and by_head["copying"][1, 0] > 0.99
    assert by_head["previous token"][0, 0] > 0.99 and by_head["prefix matching"][0, 0] < 0.05
    assert scores.is_induction_head(by_head["prefix matching"], by_head["copying"]).tolist() == [[False], [True]]
    assert tuple(by_head) == scores.SCORE_NAMES
    assert scores.induction_heads(by_head) == [(1, 0)]


def test_over_checkpoints_loads_in_order():
    model = hand_built_model(8, 12)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    zero = {k: torch.zeros_like(v) for k, v in state.items()}
    steps, results = scores.over_checkpoints(model, {10: state, 0: zero}, lambda m: m.W_E.abs().sum().item())
    assert steps == [0, 10] and results[0] == 0.0 and results[1] > 0
    with pytest.raises(ValueError, match="no checkpoint"):
        scores.over_checkpoints(model, {0: zero}, lambda m: 0, steps=[5])


def test_prediction_shares_aligns_each_logit_with_the_next_and_the_current_token():
    tokens = torch.tensor([[0, 3, 4, 3, 4]])
    logits = torch.zeros(1, 5, 6)
    for p, guess in enumerate([3, 4, 4, 0, 0]):  # right, right, current, wrong; the last predicts nothing
        logits[0, p, guess] = 1.0
    everywhere = torch.ones(1, 4, dtype=torch.bool)
    assert scores.prediction_shares(logits, tokens, everywhere) == (pytest.approx(0.5), pytest.approx(0.25))
    repeats = torch.tensor([[False, False, True, True]])
    assert scores.prediction_shares(logits, tokens, repeats) == (pytest.approx(0.0), pytest.approx(0.5))
    with pytest.raises(ValueError, match="mask"):
        scores.prediction_shares(logits, tokens, torch.ones(1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="no position"):
        scores.prediction_shares(logits, tokens, torch.zeros(1, 4, dtype=torch.bool))


def test_rise_window_dates_the_rise_by_the_share_covered():
    steps = [0, 10, 20, 30, 40, 50]
    values = torch.tensor([0.0, 0.05, 0.3, 0.95, 1.0, 0.8])  # the maximum, 1.0, is not the last value
    assert dynamics.rise_window(steps, values) == (20, 30)
    assert dynamics.rise_window(steps, values, low=0.0, high=1.0) == (0, 40)
    with pytest.raises(ValueError, match="never rises"):
        dynamics.rise_window(steps, torch.tensor([1.0, 0.5, 0.2, 0.1, 0.0, 0.0]))
    with pytest.raises(ValueError, match="low < high"):
        dynamics.rise_window(steps, values, low=0.9, high=0.1)
    with pytest.raises(ValueError, match="matching steps"):
        dynamics.rise_window(steps[:-1], values)


def test_rise_step_dates_by_the_share_of_the_rise_to_the_peak():
    steps = [0, 10, 20, 30, 40, 50]
    values = torch.tensor([0.0, 0.05, 0.3, 0.95, 1.0, 0.2])  # falls back after its peak: the fall does not count
    assert dynamics.rise_step(steps, values, 0.5) == 30
    assert dynamics.rise_step(steps, values, 0.3) == 20
    assert dynamics.rise_step(steps, values, 1.0) == 40
    assert dynamics.half_change_step(steps, values) == 20  # first to last value, for contrast
    with pytest.raises(ValueError, match=r"share must be a number in \[0, 1\]"):
        dynamics.rise_step(steps, values, 1.5)


def test_steepest_rise_finds_the_fastest_stretch():
    steps = [0, 100, 200, 300, 400, 500, 750, 1000]
    values = [0.0, 0.3, 0.35, 0.4, 0.9, 0.92, 0.92, 2.0]  # the largest 200-step rise: 200 -> 400
    assert dynamics.steepest_rise(steps, values, 200) == (200, 400)
    assert dynamics.steepest_rise(steps, values, 100) == (300, 400)
    assert dynamics.steepest_rise(steps, [1.0] * 8, 100) == (0, 100)  # a tie: the earliest
    assert dynamics.steepest_rise(steps, values, 250) == (750, 1000)  # only 500 -> 750 and 750 -> 1000 are logged
    with pytest.raises(ValueError, match="no two logged steps are 150 apart"):
        dynamics.steepest_rise(steps, values, 150)
    with pytest.raises(ValueError, match="span must be a positive integer"):
        dynamics.steepest_rise(steps, values, 0)


def test_stays_above_step_dates_the_last_crossing():
    steps = [0, 10, 20, 30, 40, 50]
    # up past the level at 10, back below at 20, up for good from 30
    assert dynamics.stays_above_step(steps, [0.0, 3.5, 2.0, 3.0, 4.0, 5.0], 3.0) == 30
    assert dynamics.stays_above_step(steps, torch.tensor([4.0] * 6), 3.0) == 0
    assert dynamics.stays_above_step(steps, [0.0, 4.0, 4.0, 4.0, 4.0, 2.9], 3.0) is None
    with pytest.raises(ValueError, match="matching steps"):
        dynamics.stays_above_step(steps, [1.0], 3.0)
