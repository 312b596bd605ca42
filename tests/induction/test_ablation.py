"""lib.induction.ablation: exact identities of the two ablation kinds, hook hygiene, bad input."""

from dataclasses import replace
from typing import get_args

import pytest
import torch

from lib.core.heads import all_heads, check_heads, head_name, listed, parse_head_name
from lib.induction import ablation as ab
from lib.induction import handbuilt, models, sequences
from lib.induction.scores import next_token_loss, per_token_loss

CONFIG = sequences.InductionConfig(
    n_layers=2, n_heads=3, d_model=32, d_head=8, vocab=24, seq_len=21, max_repeat=10, prefix_segment=5, init_std=0.3
)


@pytest.fixture(scope="module")
def model():
    m = models.make_model(CONFIG, seed=3)
    m.eval()
    return m


@pytest.fixture(scope="module")
def tokens():
    return sequences.repeated_sequences(6, sequences.seeded_generator(0), CONFIG)[0]


@pytest.mark.parametrize("kind", ab.KINDS)
def test_ablating_nothing_is_the_clean_loss(model, tokens, kind):
    with torch.inference_mode():
        clean = per_token_loss(model, tokens)
    assert torch.equal(ab.ablated_loss(model, tokens, [], kind), clean)
    assert torch.equal(ab.ablated_losses(model, tokens, [[], [(0, 1)], []], kind)[2], clean)


@pytest.mark.parametrize("head", [(1, 0), (1, 2)])
def test_kinds_agree_exactly_in_the_last_layer(model, tokens, head):
    full = ab.ablated_loss(model, tokens, [head], "full")
    preserved = ab.ablated_loss(model, tokens, [head], "pattern-preserving")
    assert torch.equal(full, preserved)
    assert not torch.equal(full, ab.ablated_loss(model, tokens, [], "full")), "removing a head should change the loss"


def test_kinds_differ_for_a_layer0_head(model, tokens):
    full = ab.ablated_loss(model, tokens, [(0, 1)], "full")
    preserved = ab.ablated_loss(model, tokens, [(0, 1)], "pattern-preserving")
    assert (full - preserved).abs().max() > 1e-3, (
        "layer-1 attention reads layer 0's output: freezing patterns must matter"
    )


def test_batched_pass_equals_one_ablation_at_a_time(model, tokens):
    ablations = ab.each_head(model) + [[(0, 0), (1, 1)]]
    for kind in ab.KINDS:
        batched = ab.ablated_losses(model, tokens, ablations, kind, max_rows=2 * len(tokens))  # 2 ablations per pass
        one_by_one = torch.stack([ab.ablated_loss(model, tokens, heads, kind) for heads in ablations])
        assert torch.allclose(batched, one_by_one, atol=1e-6)


def test_full_ablation_equals_zeroed_weights(model, tokens):
    """Zeroing a head's output is zeroing its W_O rows (b_O is shared by the heads and stays)."""
    import copy

    edited = copy.deepcopy(model)
    with torch.no_grad():
        edited.blocks[0].attn.o.weight[:, 1 * CONFIG.d_head : 2 * CONFIG.d_head] = 0
        expected = per_token_loss(edited, tokens)
    assert torch.allclose(ab.ablated_loss(model, tokens, [(0, 1)], "full"), expected, atol=1e-5)


@pytest.mark.parametrize("head", [(0, 0), (0, 2), (1, 1)])
def test_pattern_preserving_subtracts_every_path_through_the_head(model, tokens, head):
    import copy

    m64 = copy.deepcopy(model).double()
    ablated = ab.ablated_logits(m64, tokens, [[head]], "pattern-preserving")[0]
    with torch.inference_mode():
        expected = m64(tokens) - ab.head_path_logits(m64, tokens, head)
    assert (ablated - expected).abs().max() < 1e-10


def test_no_hook_left_after_any_call(model, tokens):
    assert ab.hooks_on(model) == 0
    for kind in ab.KINDS:
        ab.ablated_losses(model, tokens, ab.each_head(model), kind)
        assert ab.hooks_on(model) == 0
    bad = tokens.clone()
    bad[0, 3] = CONFIG.vocab + 5  # not a token: the embedding raises inside the hooked forward pass
    for kind in ab.KINDS:
        with pytest.raises((IndexError, RuntimeError)):
            ab.ablated_logits(model, bad, [[(0, 0)], [(1, 1)]], kind)
        assert ab.hooks_on(model) == 0, f"{kind}: a hook survived an exception"
    ab.head_path_logits(model, tokens, (0, 0))
    assert ab.hooks_on(model) == 0


@pytest.mark.parametrize(
    "heads, match",
    [
        ([(2, 0)], "layer must be"),
        ([(-1, 0)], "layer must be"),
        ([(0, 3)], "head must be"),
        ([(0, 1.0)], "head must be"),
        ([(True, 0)], "layer must be"),
        ([(0, 1), (1, 2), (0, 1)], "more than once"),
        ([0], "pair"),
    ],
)
def test_bad_heads(model, tokens, heads, match):
    with pytest.raises(ValueError, match=match):
        ab.ablated_loss(model, tokens, heads)
    assert ab.hooks_on(model) == 0


def test_bad_input(model, tokens):
    with pytest.raises(ValueError, match="kind must be one of \\['full', 'pattern-preserving'\\], got 'mean'"):
        ab.ablated_loss(model, tokens, [], kind="mean")
    with pytest.raises(ValueError, match="int64"):
        ab.ablated_loss(model, tokens.float(), [])
    with pytest.raises(ValueError, match="empty"):
        ab.ablated_losses(model, tokens, [])
    with pytest.raises(ValueError, match="max_rows"):
        ab.ablated_losses(model, tokens, [[]], max_rows=0)
    with pytest.raises(ValueError, match="layer must be"):
        ab.head_path_logits(model, tokens, (5, 0))
    with pytest.raises(ValueError, match="clean score is 0"):
        ab.fraction_removed(0.0, -1.0)
    with pytest.raises(ValueError, match="do not match"):
        next_token_loss(torch.zeros(2, 5, 7), tokens)


def test_kinds_and_check_heads(model):
    assert ab.KINDS == get_args(ab.Kind) == ("full", "pattern-preserving")
    assert check_heads(model, [[1, 2], (0, 0)]) == ((1, 2), (0, 0))
    assert check_heads(model, []) == ()
    with pytest.raises(ValueError, match="head must be an integer in \\[0, 2\\], got 3 in \\(0, 3\\)"):
        check_heads(model, [(0, 3)])
    with pytest.raises(ValueError, match=r"heads listed more than once: \['L0H1'\]"):
        check_heads(model, [(0, 1), (0, 1)])


def test_fraction_removed_and_names(model):
    assert ab.fraction_removed(-4.0, -1.0).item() == pytest.approx(0.75)
    assert ab.fraction_removed(torch.tensor([-2.0, -2.0]), torch.tensor([-2.0, 0.5])).tolist() == pytest.approx(
        [0.0, 1.25]
    )
    assert all_heads(model)[:4] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert ab.each_head(model)[0] == [] and len(ab.each_head(model)) == 1 + 6
    assert head_name((1, 2)) == "L1H2"


def test_next_token_loss_matches_per_token_loss(model, tokens):
    with torch.inference_mode():
        logits = model(tokens)
        assert torch.equal(next_token_loss(logits, tokens), per_token_loss(model, tokens))
        stacked = next_token_loss(torch.stack([logits, 2 * logits]), tokens)
    assert stacked.shape == (2, *tokens.shape[:1], tokens.shape[1] - 1)


def test_smeared_model_keeps_its_permanent_hook(tokens):
    from lib.induction import smear

    smeared = smear.make_model(CONFIG.with_layers(1), seed=0, alpha=-1.0)
    smeared.eval()
    assert ab.hooks_on(smeared) == 0, "the smear's permanent hook is part of the model, not an ablation hook"
    for kind in ab.KINDS:
        ab.ablated_losses(smeared, tokens, ab.each_head(smeared), kind)
    assert ab.hooks_on(smeared) == 0
    with torch.inference_mode():
        with_smear = per_token_loss(smeared, tokens)
        with smear.smear_disabled(smeared):
            without = per_token_loss(smeared, tokens)
    assert not torch.allclose(with_smear, without), "the smear must still act after the ablation hooks are gone"
    one_layer = [ab.ablated_loss(smeared, tokens, [(0, 1)], kind) for kind in ab.KINDS]
    assert torch.equal(*one_layer), "one layer: nothing downstream has a pattern to change"


def test_replacements():
    assert ab.REPLACEMENTS == get_args(ab.Replacement) == ("zero", "mean", "resample")
    with pytest.raises(ValueError, match="replacement must be one of"):
        ab.ablated_logits(models.make_model(CONFIG, seed=3), torch.zeros(1, 5, dtype=torch.int64), [[]], "full", "none")


@pytest.mark.parametrize("kind", ab.KINDS)
def test_mean_ablation_on_identical_sequences_changes_nothing(model, tokens, kind):
    """On a batch of one sequence repeated, each head's output equals its mean over the batch."""
    same = tokens[:1].repeat(4, 1)
    clean = ab.ablated_loss(model, same, [], kind)
    for heads in ([(0, 1)], [(1, 2)], all_heads(model)):
        mean = ab.ablated_loss(model, same, heads, kind, "mean")
        assert torch.allclose(mean, clean, atol=1e-5)
        assert not torch.allclose(ab.ablated_loss(model, same, heads, kind, "zero"), clean, atol=1e-3)


def test_mean_ablation_puts_back_the_mean_output(model, tokens):
    """Mean ablation = a hook that sets the head's z to its clean mean over the batch, position by position."""
    layer, head = 0, 2
    with torch.inference_mode():
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name == f"blocks.{layer}.attn.hook_z")
        mean = cache[f"blocks.{layer}.attn.hook_z"][:, :, head].mean(dim=0)  # (seq, d_head)
        assert torch.allclose(ab.mean_outputs(model, tokens)[layer][:, head], mean, atol=1e-6)

        def put_back(z, hook):
            z = z.clone()
            z[:, :, head] = mean
            return z

        with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", put_back)]):
            expected = per_token_loss(model, tokens)
    got = ab.ablated_losses(model, tokens, [[(layer, head)], []], "full", replacement="mean")
    assert torch.allclose(got[0], expected, atol=1e-6)
    assert torch.equal(got[1], ab.ablated_loss(model, tokens)), "the clean row stays clean"
    full, kept = (ab.ablated_loss(model, tokens, [(1, 0)], kind, "mean") for kind in ab.KINDS)
    assert torch.equal(full, kept), "in the last layer the two kinds agree for mean ablation too"
    assert ab.hooks_on(model) == 0


def test_head_names_round_trip():
    assert head_name((1, 2)) == "L1H2" and head_name([10, 0]) == "L10H0"
    assert parse_head_name("L1H2") == (1, 2) and parse_head_name("L10H11") == (10, 11)
    for head in [(0, 0), (3, 7), (12, 5)]:
        assert parse_head_name(head_name(head)) == head
    for bad in ["L1", "H1L2", "l1h2", "L-1H2", "L1H2 ", "", 12]:
        with pytest.raises(ValueError, match="L<layer>H<head>"):
            parse_head_name(bad)
    for bad in [(1,), (1, -1), (1.0, 2), "L1H2"]:
        with pytest.raises(ValueError):
            head_name(bad)
    assert listed([(1, 3), (0, 5)]) == "L1H3, L0H5" and listed([]) == "none"


def test_resample_ablation_puts_back_another_sequences_output(model, tokens):
    """Resample ablation = a hook that sets the head's z to its clean value on the next sequence of the batch."""
    layer, head = 0, 1
    name = f"blocks.{layer}.attn.hook_z"
    with torch.inference_mode():
        _, cache = model.run_with_cache(tokens, names_filter=lambda n: n == name)
        other = cache[name][:, :, head].roll(-1, dims=0)  # (batch, seq, d_head): sequence b + 1's output

        def put_back(z, hook):
            z = z.clone()
            z[:, :, head] = other
            return z

        with model.hooks(fwd_hooks=[(name, put_back)]):
            expected = per_token_loss(model, tokens)
    got = ab.ablated_losses(model, tokens, [[(layer, head)], []], "full", replacement="resample")
    assert torch.allclose(got[0], expected, atol=1e-6)
    assert torch.equal(got[1], ab.ablated_loss(model, tokens))
    same = tokens[:1].repeat(3, 1)
    assert torch.allclose(
        ab.ablated_loss(model, same, all_heads(model), "full", "resample"), ab.ablated_loss(model, same), atol=1e-5
    ), "resampling from identical sequences changes nothing"
    with pytest.raises(ValueError, match="at least 2 sequences"):
        ab.ablated_loss(model, tokens[:1], [(0, 0)], "full", "resample")
    assert ab.hooks_on(model) == 0


def _two_head_hand_built():
    """The hand-built circuit with a second head per layer: L0H1 averages the tokens so far into the ``token``
    slot (which layer 1's queries read, its keys do not); L1H1 is blank."""
    layout = handbuilt.HandBuiltLayout(VOCAB, SEQ)
    config = replace(handbuilt.hand_built_config(VOCAB, SEQ), n_heads=2)
    model = handbuilt.blank_model(config, layout, 20.0)
    handbuilt.set_head(model, 0, 0, **handbuilt.previous_token_head_weights(layout))
    handbuilt.set_head(model, 1, 0, **handbuilt.induction_head_weights(layout))
    W_V = torch.zeros(layout.d_model, layout.d_head)
    W_V[layout.token, : layout.vocab] = torch.eye(layout.vocab)
    W_O = torch.zeros(layout.d_head, layout.d_model)
    W_O[: layout.vocab, layout.token] = torch.eye(layout.vocab)
    handbuilt.set_head(model, 0, 1, W_V=W_V, W_O=W_O)  # zero QK: uniform attention over the prefix
    model.eval()
    return model


VOCAB, SEQ = 16, 29


def test_key_path_cut_on_the_hand_built_model():
    """Cutting the previous-token head from the induction head's keys breaks induction; cutting the other head does
    not, though removing that head altogether (it feeds the queries) does change the loss."""
    model = _two_head_hand_built()
    config = handbuilt.hand_built_config(VOCAB, SEQ)
    tokens, period = sequences.repeated_sequences(16, sequences.seeded_generator(0), config)
    mask = sequences.repeat_mask(period, config)
    clean = ab.ablated_loss(model, tokens)
    assert clean[mask].mean() < 0.1, "the hand-built circuit predicts the repeats"
    for replacement in ab.REPLACEMENTS:
        cut = ab.key_path_cut_losses(model, tokens, [(0, 0), (0, 1)], [(1, 0), (1, 1)], replacement)
        assert cut.shape == (2, 2, *clean.shape)
        assert cut[0, 0][mask].mean() > 1.0, f"{replacement}: previous-token head cut from the keys breaks induction"
        assert torch.allclose(cut[1, 0], clean, atol=1e-5), f"{replacement}: L1H0's keys never read L0H1"
        assert torch.allclose(cut[:, 1], clean.expand(2, *clean.shape), atol=1e-5), "L1H1 is blank"
    full = ab.ablated_loss(model, tokens, [(0, 1)])
    assert (full - clean).abs().max() > 1e-2, "L0H1 matters through the queries: the cut is specific to the keys"
    assert ab.hooks_on(model) == 0


def test_key_path_cut_bad_input():
    model = _two_head_hand_built()
    tokens = torch.zeros(2, 6, dtype=torch.int64)
    with pytest.raises(ValueError, match="later layer"):
        ab.key_path_cut_losses(model, tokens, [(1, 0)], [(1, 1)])
    with pytest.raises(ValueError, match="at least one head"):
        ab.key_path_cut_losses(model, tokens, [], [(1, 1)])
    with pytest.raises(ValueError, match="replacement"):
        ab.key_path_cut_losses(model, tokens, [(0, 0)], [(1, 1)], "none")
    with pytest.raises(ValueError, match="at least 2 sequences"):
        ab.key_path_cut_losses(model, tokens[:1], [(0, 0)], [(1, 1)], "resample")
