"""lib.induction.circuits on the hand-built model, where every answer is known, and on random models for the
baselines."""

import math

import pytest
import torch

from lib.induction import circuits, scores
from lib.induction.ablation import hooks_on
from lib.induction.handbuilt import HandBuiltLayout, hand_built_model, set_head
from lib.induction.models import config_of, make_model
from lib.induction.sequences import InductionConfig, prefix_matching_tokens, repeated_sequences, seeded_generator

VOCAB, SEQ = 32, 45
LAYOUT = HandBuiltLayout(VOCAB, SEQ)
SMALL = InductionConfig(n_heads=2, d_model=32, d_head=8, vocab=16, seq_len=17, max_repeat=8, prefix_segment=4)


@pytest.fixture(scope="module")
def hand():
    return hand_built_model(VOCAB, SEQ)


def random_tokens(batch, seq, vocab, seed=0):
    """``(batch, seq)``: BOS, then random content tokens."""
    body = torch.randint(1, vocab, (batch, seq - 1), generator=torch.Generator().manual_seed(seed))
    return torch.cat([torch.zeros(batch, 1, dtype=torch.int64), body], dim=1)


# --- composition scores -------------------------------------------------------------------------


def test_hand_built_composes_through_its_keys_only(hand):
    got = circuits.composition_scores(hand)
    assert set(got) == set(circuits.COMPOSITION_KINDS) and got["K"].shape == (1, 1)
    # layer 0 writes the previous-token slot; layer 1 reads it only in its keys (the query and the value read the
    # token slot). The K product is a scaled identity on the 31 content tokens, W_OV of layer 0 an identity on all
    # 32 tokens: 31 / (sqrt(32) sqrt(31)) = 1 / sqrt(32), the score of two aligned identities, not 1.
    assert got["K"].item() == pytest.approx(1 / math.sqrt(VOCAB), rel=1e-5)
    assert got["Q"].item() == 0.0 and got["V"].item() == 0.0


def test_composition_follows_the_reading_side(hand):
    """Move the layer-1 head's read of the previous-token slot from its keys to its queries, then to its values."""
    model = hand_built_model(VOCAB, SEQ)
    slot = torch.zeros(LAYOUT.d_model, LAYOUT.d_head)
    slot[LAYOUT.previous.start + torch.arange(1, VOCAB), torch.arange(1, VOCAB)] = 1.0
    token = torch.zeros(LAYOUT.d_model, LAYOUT.d_head)
    token[LAYOUT.token.start + torch.arange(1, VOCAB), torch.arange(1, VOCAB)] = 1.0
    set_head(model, 1, 0, W_Q=slot, W_K=token)  # the previous token now enters the *query*
    got = circuits.composition_scores(model)
    assert got["Q"].item() == pytest.approx(1 / math.sqrt(VOCAB), rel=1e-5)
    assert got["K"].item() == 0.0 and got["V"].item() == 0.0
    set_head(model, 1, 0, W_Q=token, W_V=slot)  # token vs token in QK; the previous token enters the *value*
    got = circuits.composition_scores(model)
    assert got["V"].item() > 0.1 and got["Q"].item() == 0.0 and got["K"].item() == 0.0


def test_composition_matches_elhage_in_column_vector_notation():
    """Elhage et al. write W_OV = W_O W_V and W_QK = W_Q^T W_K for column vectors; recompute from those."""
    model = make_model(SMALL, seed=3)
    W_Q, W_K, W_V, W_O = (getattr(model, n).detach().double() for n in ("W_Q", "W_K", "W_V", "W_O"))
    got = circuits.composition_scores(model)
    norm = torch.linalg.matrix_norm
    for a in range(SMALL.n_heads):
        for b in range(SMALL.n_heads):
            ov_a = W_O[0, a].T @ W_V[0, a].T  # (d_model, d_model), acts on a column vector
            ov_b = W_O[1, b].T @ W_V[1, b].T
            qk_b = W_Q[1, b] @ W_K[1, b].T  # x^T qk_b y is the score of query x on key y
            expected = {
                "Q": norm(qk_b.T @ ov_a) / (norm(qk_b) * norm(ov_a)),
                "K": norm(qk_b @ ov_a) / (norm(qk_b) * norm(ov_a)),
                "V": norm(ov_b @ ov_a) / (norm(ov_b) * norm(ov_a)),
            }
            for kind, value in expected.items():
                assert got[kind][a, b].item() == pytest.approx(value.item(), rel=1e-5), (kind, a, b)


def test_random_baseline_is_near_one_over_sqrt_d_model():
    baseline = circuits.at_initialisation(circuits.composition_scores, SMALL, range(1, 9))
    assert set(baseline) == set(circuits.COMPOSITION_KINDS)
    for kind, values in baseline.items():
        assert values.shape == (8, SMALL.n_heads, SMALL.n_heads)
        # two random rank-d_head maps of a d_model space: E ||AB||^2 = ||A||^2 ||B||^2 / d_model
        assert values.mean().item() == pytest.approx(1 / math.sqrt(SMALL.d_model), rel=0.15), kind


def test_composition_and_baseline_validate_inputs(hand):
    with pytest.raises(ValueError, match="source_layer < target_layer"):
        circuits.composition_scores(hand, 1, 0)
    with pytest.raises(ValueError, match="target_layer must be an integer in \\[0, 1\\]"):
        circuits.composition_scores(hand, 0, 2)
    with pytest.raises(ValueError, match="seeds is empty"):
        circuits.at_initialisation(circuits.composition_scores, SMALL, [])


def test_same_model_baseline_keeps_the_spectra(hand):
    got = circuits.composition_baseline(hand, samples=300, seed=0)
    assert set(got) == set(circuits.COMPOSITION_KINDS) and got["K"].shape == (1, 1, 300)
    # the hand-built K product lines up two identities: no rotation of the same spectra does as well
    assert circuits.composition_scores(hand)["K"].item() > got["K"].max().item()
    # rotated, the Q and V pairs (0 as built: disjoint slots) overlap as unrelated subspaces do
    assert got["Q"].min().item() > 0 and got["V"].min().item() > 0
    # whatever the spectra, a Haar rotation gives E[score^2] = 1 / d_model
    for kind, values in got.items():
        assert (values**2).mean().item() == pytest.approx(1 / LAYOUT.d_model, rel=0.1), kind
    assert torch.equal(circuits.composition_baseline(hand, samples=300, seed=0)["K"], got["K"])


def test_same_model_baseline_sees_only_singular_values():
    """Rotating a model's matrices leaves its baseline unchanged; a low-rank spectrum spreads it."""
    model = make_model(SMALL, seed=3)
    g = torch.Generator().manual_seed(1)
    rotation, _ = torch.linalg.qr(torch.randn(SMALL.d_model, SMALL.d_model, generator=g))
    before = circuits.composition_baseline(model, samples=50, seed=4)
    weights = {name: getattr(model, name).detach().clone() for name in ("W_Q", "W_K", "W_V", "W_O")}
    for layer in range(SMALL.n_layers):
        for head in range(SMALL.n_heads):
            rotated = {name: rotation.T @ w[layer, head] for name, w in weights.items() if name != "W_O"}
            set_head(model, layer, head, **rotated, W_O=weights["W_O"][layer, head] @ rotation)
    assert not torch.allclose(circuits.ov_matrices(model), weights["W_V"] @ weights["W_O"], atol=1e-3)
    after = circuits.composition_baseline(model, samples=50, seed=4)
    for kind in circuits.COMPOSITION_KINDS:
        assert torch.allclose(before[kind], after[kind], atol=1e-5), kind
    # a rank-one reading map against a rank-one writer: the score is |cos| of two random directions,
    # spread over [0, 1]; full-rank flat spectra concentrate at 1 / sqrt(d_model)
    low = make_model(SMALL, seed=3)
    for layer in range(SMALL.n_layers):
        for head in range(SMALL.n_heads):
            set_head(low, layer, head, W_V=weights["W_V"][layer, head] * (torch.arange(SMALL.d_head) == 0))
    spread = circuits.composition_baseline(low, samples=200, seed=4)["V"].std().item()
    assert spread > 2 * before["V"].std().item()
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        circuits.composition_baseline(model, samples=0)
    with pytest.raises(ValueError, match="source_layer < target_layer"):
        circuits.composition_baseline(model, 1, 0)


# --- positional QK ---------------------------------------------------------------------------------


def test_hand_built_previous_token_head_peaks_one_back_by_position(hand):
    qk = circuits.positional_qk(hand, layer=0)
    assert qk.shape == (1, SEQ, SEQ)
    assert torch.isinf(qk[0].triu(1)[qk[0].triu(1) != 0]).all()  # the causal mask
    rows = torch.arange(1, SEQ)
    assert torch.equal(qk[0, rows].argmax(dim=-1), rows - 1)  # every query's peak is the key one back
    assert qk[0, rows, rows - 1] == pytest.approx(torch.full((SEQ - 1,), 20.0))
    share = circuits.positional_previous_share(hand, layer=0)
    assert share.shape == (1,) and share.item() > 0.99
    # the induction head ignores position (only BOS's key has a positional term, which its query bias
    # reads and the positional QK leaves out): its positional scores are flat, its share 1 / (i + 1)
    flat = circuits.positional_previous_share(hand, layer=1).item()
    assert flat == pytest.approx((1 / (rows + 1.0)).mean().item(), rel=1e-5)
    with pytest.raises(ValueError, match="layer must be an integer in \\[0, 1\\]"):
        circuits.positional_qk(hand, layer=2)


# --- eigenvalues ---------------------------------------------------------------------------------


def test_eigenvalue_score_signs_and_the_small_product():
    eye = torch.eye(3)
    assert circuits.eigenvalue_score(eye, 2 * eye).item() == pytest.approx(1.0)
    assert circuits.eigenvalue_score(eye, -eye).item() == pytest.approx(-1.0)
    rotation = torch.tensor([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues +-i: no copying, no anti-copying
    assert circuits.eigenvalue_score(torch.eye(2), rotation).item() == pytest.approx(0.0, abs=1e-6)
    assert circuits.eigenvalue_score(torch.eye(2), torch.zeros(2, 2)).isnan()
    g = torch.Generator().manual_seed(0)
    left, right = torch.randn(20, 4, generator=g), torch.randn(4, 20, generator=g)
    full = torch.linalg.eigvals((left @ right).double())
    expected = full.real.sum() / full.abs().sum()  # 16 of the 20 eigenvalues are rounding noise around 0
    assert circuits.eigenvalue_score(left, right).item() == pytest.approx(expected.item(), abs=1e-4)
    with pytest.raises(ValueError, match="\\(n, k\\) and \\(k, n\\)"):
        circuits.eigenvalue_score(left, right.T)


def test_hand_built_ov_circuits(hand):
    full = circuits.full_ov_circuit(hand, (1, 0))
    assert full.shape == (VOCAB, VOCAB)
    expected = torch.diag(torch.tensor([0.0] + [10.0] * (VOCAB - 1)))  # strength / 2 on each content token
    assert torch.allclose(full, expected)
    copying = circuits.ov_eigenvalue_copying(hand)
    assert copying[1, 0].item() == pytest.approx(1.0)
    assert copying[0, 0].isnan()  # layer 0 writes the previous slot, which the unembedding never reads
    assert circuits.ov_eigenvalue_copying(hand, layers=[1])[0, 0].isnan()


def test_anti_copying_head_scores_minus_one(hand):
    model = hand_built_model(VOCAB, SEQ)
    W_O = torch.zeros(LAYOUT.d_head, LAYOUT.d_model)
    W_O[torch.arange(1, VOCAB), LAYOUT.output.start + torch.arange(1, VOCAB)] = -1.0
    set_head(model, 1, 0, W_O=W_O)
    assert circuits.ov_eigenvalue_copying(model)[1, 0].item() == pytest.approx(-1.0)
    tokens = random_tokens(4, 20, VOCAB)
    assert circuits.olsson_copying_score(model, tokens)[1, 0].item() == 0.0  # it lowers the token it reads


def test_random_heads_neither_copy_nor_anti_copy():
    values = circuits.at_initialisation(lambda m: {"eig": circuits.ov_eigenvalue_copying(m)}, SMALL, range(8))["eig"]
    assert values.shape == (8, SMALL.n_layers, SMALL.n_heads)
    assert abs(values.mean().item()) < 0.1 and values.abs().max().item() < 0.9


def test_hand_built_virtual_qk_matches_the_previous_token(hand):
    virtual = circuits.virtual_qk_circuit(hand, (0, 0), (1, 0))
    assert virtual.shape == (VOCAB, VOCAB)
    # a query holding A gives the score `strength` (20) to a key into which layer 0 moved A, and 0 elsewhere
    expected = torch.diag(torch.tensor([0.0] + [20.0] * (VOCAB - 1)))
    assert torch.allclose(virtual, expected, atol=1e-4)
    assert circuits.virtual_qk_eigenvalue_score(hand, (0, 0), (1, 0)).item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="earlier layer"):
        circuits.virtual_qk_circuit(hand, (1, 0), (1, 0))
    with pytest.raises(ValueError, match="target's head must be an integer in \\[0, 0\\]"):
        circuits.virtual_qk_circuit(hand, (0, 0), (1, 1))


# --- Olsson's copying score -------------------------------------------------------------------


def test_olsson_copying_on_the_hand_built_model(hand):
    got = circuits.olsson_copying_score(hand, random_tokens(4, 26, VOCAB))
    assert got.shape == (2, 1)
    assert got[1, 0].item() == pytest.approx(1.0)  # raises the token it reads and nothing else
    assert got[0, 0].item() == 0.0  # writes nothing the unembedding reads
    with pytest.raises(ValueError, match="\\(batch, seq\\) int64"):
        circuits.olsson_copying_score(hand, torch.arange(5))
    with pytest.raises(ValueError, match="at least one more position"):
        circuits.olsson_copying_score(hand, torch.zeros(2, 1, dtype=torch.int64))


def test_olsson_copying_of_random_heads_is_about_one_over_vocab():
    tokens = random_tokens(2, SMALL.seq_len, SMALL.vocab)
    values = circuits.at_initialisation(
        lambda m: {"olsson": circuits.olsson_copying_score(m, tokens)}, SMALL, range(8)
    )["olsson"]
    assert 0.5 / SMALL.vocab < values.mean().item() < 2 / SMALL.vocab


def test_copying_threshold_rejects_random_heads():
    """The classifier's copying threshold sits far above what random heads score (chapter 5 measures it too)."""
    config = InductionConfig()
    copy_tokens = torch.randint(1, config.vocab, (25,), generator=torch.Generator().manual_seed(0))
    values = circuits.at_initialisation(
        lambda m: {"copying": scores.copying_score(m, copy_tokens)}, config, range(1000, 1020)
    )["copying"]
    assert 0.3 < (values > 0).float().mean().item() < 0.7  # `copying > 0` would accept about half of them
    assert values.max().item() < scores.COPYING_THRESHOLD
    assert values.mean().item() + 4 * values.std().item() < scores.COPYING_THRESHOLD


# --- keys or queries ----------------------------------------------------------------------------


def test_hand_built_needs_layer_0_in_its_keys_only(hand):
    config = config_of(hand)
    prefix = prefix_matching_tokens(8, seeded_generator(0), config)
    clean_logits, clean_pattern = circuits.run_with_qk_from_embeddings(hand, prefix, ())
    with torch.inference_mode():
        assert torch.allclose(clean_logits, hand(prefix))
    assert scores.prefix_matching_score(clean_pattern, prefix).item() > 0.99
    # its query reads the token slot, which layer 0 does not write: cutting layer 0 from the queries changes nothing
    _, queries_cut = circuits.run_with_qk_from_embeddings(hand, prefix, ("queries",))
    assert torch.allclose(queries_cut, clean_pattern)
    _, keys_cut = circuits.run_with_qk_from_embeddings(hand, prefix, ["keys"])
    assert scores.prefix_matching_score(keys_cut, prefix).item() < 0.05
    tokens, period = repeated_sequences(16, seeded_generator(1), config)
    logits, _ = circuits.run_with_qk_from_embeddings(hand, tokens, ("keys", "queries"))
    mask = torch.arange(config.seq_len - 1)[None, :] > period[:, None]
    repeated = scores.masked_mean(scores.next_token_loss(logits, tokens), mask).item()
    assert repeated > math.log(VOCAB) - 0.5  # no better than chance once the keys lose the previous token
    assert hooks_on(hand) == 0


def test_qk_intervention_validates_inputs(hand):
    tokens = random_tokens(2, 10, VOCAB)
    with pytest.raises(ValueError, match="the string 'keys'"):
        circuits.run_with_qk_from_embeddings(hand, tokens, "keys")
    with pytest.raises(ValueError, match="sides must be one of"):
        circuits.run_with_qk_from_embeddings(hand, tokens, ("values",))
    with pytest.raises(ValueError, match="layer must be a positive integer"):
        circuits.run_with_qk_from_embeddings(hand, tokens, ("keys",), layer=0)
    with pytest.raises(ValueError, match="\\(batch, seq\\) int64"):
        circuits.run_with_qk_from_embeddings(hand, tokens[0], ("keys",))
    assert hooks_on(hand) == 0


def test_composition_against_baseline_is_the_mean_score_in_null_sds(hand):
    score, z = circuits.composition_against_baseline(hand, 0, [0], "K", samples=300, seed=0)
    null = circuits.composition_baseline(hand, samples=300, seed=0)["K"][0, 0]
    assert score == pytest.approx(circuits.composition_scores(hand)["K"][0, 0].item())
    assert z == pytest.approx(((score - null.mean()) / null.std()).item(), rel=1e-5)
    assert z > 3  # the hand-built pair composes through its keys
    with pytest.raises(ValueError, match="at least one"):
        circuits.composition_against_baseline(hand, 0, [])
