"""lib.induction.natural.slim: the slim attention-only model of the natural-text runs (issue 29) computes what the
bridge computes where both apply, keeps shortformer positions out of the residual stream, and works with the scores
and ablations of lib."""

import pytest
import torch

from lib.core.tokens import BOS
from lib.induction import ablation, scores
from lib.induction.natural import edits, probes, runs, slim

TOKENS = torch.tensor([[BOS, 5, 6, 7, 5, 6, 9, 7, 5, 2, 3, 6], [BOS, *range(10, 21)]])


@pytest.mark.parametrize("layer_norm", [False, True])
def test_from_bridge_matches_the_bridge(layer_norm):
    bridge = runs.make_model(
        runs.NaturalConfig(n_layers=2, n_heads=2, d_model=16, d_head=8, seq_len=12, layer_norm=layer_norm), seed=1
    )
    with torch.no_grad():  # biases and LayerNorm weights away from their initial 0 and 1, so the copy is tested
        for parameter in bridge.original_model.parameters():
            parameter.add_(
                0.1 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(parameter.numel()))
            )
    model = slim.from_bridge(bridge)
    with torch.inference_mode():
        torch.testing.assert_close(model(TOKENS), bridge(TOKENS), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(
        scores.attention_patterns(model, TOKENS), scores.attention_patterns(bridge, TOKENS), rtol=1e-5, atol=1e-5
    )
    pattern = scores.attention_patterns(model, TOKENS)
    torch.testing.assert_close(
        scores.prefix_matching_score(pattern, TOKENS),
        scores.prefix_matching_score(scores.attention_patterns(bridge, TOKENS), TOKENS),
    )
    pool = torch.arange(1, 30)
    torch.testing.assert_close(
        scores.copying_score(model, pool), scores.copying_score(bridge, pool), rtol=1e-4, atol=1e-4
    )
    sets = [[], [(0, 1)], [(1, 0), (1, 1)]]
    for kind in ablation.KINDS:
        torch.testing.assert_close(
            ablation.ablated_losses(model, TOKENS, sets, kind),
            ablation.ablated_losses(bridge, TOKENS, sets, kind),
            rtol=1e-4,
            atol=1e-4,
        )
    torch.testing.assert_close(
        edits.without_prefix_matching_loss(model, TOKENS, (1, 0)),
        edits.without_prefix_matching_loss(bridge, TOKENS, (1, 0)),
        rtol=1e-4,
        atol=1e-4,
    )
    assert ablation.hooks_on(model) == 0  # every temporary hook removed


def test_shortformer_keeps_positions_out_of_the_residual_stream():
    cfg = slim.SlimConfig(n_layers=2, n_heads=2, d_model=16, d_head=8, n_ctx=12, d_vocab=32, positions="shortformer")
    model = slim.SlimModel(cfg, seed=0)
    tokens = torch.full((1, 12), 7)  # one token at every position (no BOS)
    names = ["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre", "blocks.0.attn.hook_k", "blocks.0.attn.hook_v"]
    _, cache = model.run_with_cache(tokens, names_filter=lambda name: name in names)
    # without positions in the stream, the stream is the same at every position
    resid = cache["blocks.0.hook_resid_pre"][0]
    assert torch.equal(resid, resid[:1].expand_as(resid))
    torch.testing.assert_close(cache["blocks.0.hook_resid_pre"][0], model.W_E[tokens[0]])
    values = cache["blocks.0.attn.hook_v"][0]
    assert torch.equal(values, values[:1].expand_as(values))  # values read no position
    keys = cache["blocks.0.attn.hook_k"][0]
    assert not torch.allclose(keys, keys[:1].expand_as(keys))  # keys do
    # layer 0 mixes values, which carry no position, so layer 1's input holds none either
    later = cache["blocks.1.hook_resid_pre"][0]
    torch.testing.assert_close(later, later[:1].expand_as(later))
    standard = slim.SlimModel(slim.SlimConfig(**{**cfg.__dict__, "positions": "standard"}), seed=0)
    _, cache = standard.run_with_cache(tokens, names_filter=lambda name: name == "blocks.0.hook_resid_pre")
    resid = cache["blocks.0.hook_resid_pre"][0]
    assert not torch.allclose(resid, resid[:1].expand_as(resid))  # standard positions are in the stream


def test_slim_model_trains_and_reports_its_weights():
    cfg = slim.SlimConfig(n_layers=2, n_heads=4, d_model=16, d_head=4, n_ctx=12, d_vocab=32, layer_norm=True)
    model = slim.SlimModel(cfg, seed=0)
    assert model.W_Q.shape == (2, 4, 16, 4) and model.W_O.shape == (2, 4, 4, 16) and model.b_O.shape == (2, 16)
    assert model.W_E.shape == (32, 16) and model.W_pos.shape == (12, 16) and model.W_U.shape == (16, 32)
    tokens = torch.randint(1, 32, (8, 12), generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = scores.per_token_loss(model, tokens).mean()
    for _ in range(20):
        loss = scores.per_token_loss(model, tokens).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss < first - 0.5
    assert probes.window_loss(model, tokens).shape == (8, 11)
    assert torch.equal(slim.SlimModel(cfg, seed=0).W_E, slim.SlimModel(cfg, seed=0).W_E)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"positions": "rotary"}, "positions"), ({"d_head": 0}, "d_head"), ({"init_std": 0.0}, "init_std")],
)
def test_slim_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        slim.SlimConfig(**kwargs)


def test_slim_model_rejects_long_input():
    model = slim.SlimModel(slim.SlimConfig(n_layers=1, n_heads=1, d_model=8, d_head=8, n_ctx=4, d_vocab=8))
    with pytest.raises(ValueError, match="n_ctx"):
        model(torch.zeros(1, 5, dtype=torch.int64))
