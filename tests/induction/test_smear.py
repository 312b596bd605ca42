import math

import pytest
import torch

from lib.core.train import TrainConfig, train
from lib.induction import models, sequences
from lib.induction import smear as sm
from lib.induction.scores import per_token_loss

SMALL = sequences.InductionConfig(
    n_layers=2, n_heads=2, d_model=16, d_head=8, vocab=16, seq_len=21, min_repeat=3, max_repeat=8, prefix_segment=5
)


def tokens(batch=3, seed=0):
    return sequences.repeated_sequences(batch, sequences.seeded_generator(seed), SMALL)[0]


def keys_of(model, toks, layer=0):
    _, cache = model.run_with_cache(toks, names_filter=lambda n: n == f"blocks.{layer}.attn.hook_k")
    return cache[f"blocks.{layer}.attn.hook_k"]


def test_sigma_one_equals_plain_model_exactly():
    plain = models.make_model(SMALL, seed=3)
    smeared = sm.make_model(SMALL, seed=3, alpha=float("inf"))
    toks = tokens()
    with torch.inference_mode():
        assert torch.equal(smeared(toks), plain(toks))


def test_sigma_zero_gives_previous_key_first_unchanged():
    plain = models.make_model(SMALL, seed=3)
    smeared = sm.make_model(SMALL, seed=3, alpha=float("-inf"))
    toks = tokens()
    # layer 0 reads the same embeddings in both models, so the plain model's keys are the reference
    raw, got = keys_of(plain, toks), keys_of(smeared, toks)
    assert torch.equal(got[:, 0], raw[:, 0])
    assert torch.equal(got[:, 1:], raw[:, :-1])


def test_smear_keys_mixes_per_head():
    keys = torch.randn(2, 5, 3, 4)
    sigma = torch.tensor([1.0, 0.0, 0.25])
    out = sm.smear_keys(keys, sigma)
    assert torch.equal(out[:, :, 0], keys[:, :, 0])
    assert torch.equal(out[:, 1:, 1], keys[:, :-1, 1])
    torch.testing.assert_close(out[:, 1:, 2], 0.25 * keys[:, 1:, 2] + 0.75 * keys[:, :-1, 2])
    assert torch.equal(out[:, 0], keys[:, 0])
    with pytest.raises(ValueError):
        sm.smear_keys(keys, torch.ones(2))


def test_gradients_reach_alpha_and_training_moves_it():
    model = sm.make_model(SMALL, seed=0)
    per_token_loss(model, tokens()).mean().backward()
    alpha = sm.smear_of(model).alpha
    assert alpha.grad is not None and alpha.grad.shape == (SMALL.n_layers, SMALL.n_heads) and alpha.grad.abs().sum() > 0
    model.zero_grad(set_to_none=True)
    before = alpha.detach().clone()
    train(
        model,
        sequences.make_batch_fn(SMALL),
        models.training_loss,
        TrainConfig(steps=3, lr=1e-2, batch_size=4, progress=False),
    )
    assert not torch.equal(alpha.detach(), before)


def test_state_dict_round_trip_and_checkpoints():
    model, history = sm.train_model(
        SMALL, seed=1, train_config=TrainConfig(steps=4, lr=1e-2, batch_size=4, checkpoint_steps=(0, 4), progress=False)
    )
    state = model.state_dict()
    assert sm.STATE_KEY in state and sm.STATE_KEY in history.checkpoints[4]
    torch.testing.assert_close(sm.sigma_of_state(history.checkpoints[0]), torch.full((2, 2), 0.5))
    fresh = sm.make_model(SMALL, seed=7)
    fresh.load_state_dict(state)
    torch.testing.assert_close(sm.smear_sigma(fresh), sm.smear_sigma(model))
    toks = tokens()
    with torch.inference_mode():
        assert torch.equal(fresh(toks), model(toks))
    with pytest.raises(RuntimeError):  # a plain model cannot silently drop the smear
        models.make_model(SMALL, seed=0).load_state_dict(state)
    with pytest.raises(ValueError):
        sm.sigma_of_state(models.make_model(SMALL, seed=0).state_dict())


def test_switch_off_restores_plain_keys():
    plain = models.make_model(SMALL, seed=2)
    model = sm.make_model(SMALL, seed=2, alpha=-1.0)
    toks = tokens()
    with torch.inference_mode():
        assert not torch.equal(model(toks), plain(toks))
        with sm.smear_disabled(model):
            assert torch.equal(model(toks), plain(toks))
        assert not torch.equal(model(toks), plain(toks))


def test_smear_survives_reset_hooks_and_temporary_hooks():
    model = sm.make_model(SMALL, seed=2, alpha=-1.0)
    toks = tokens()
    with torch.inference_mode():
        before = model(toks)
        model.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_k", lambda k, hook: k)])
        model.reset_hooks()
        assert torch.equal(model(toks), before)


def test_alpha_tensor_init_and_bad_input():
    alpha = torch.tensor([[0.0, 1.0], [2.0, -3.0]])
    model = models.make_model(SMALL, seed=0)
    sm.attach_smear(model, alpha)
    torch.testing.assert_close(sm.smear_sigma(model), torch.sigmoid(alpha))
    with pytest.raises(ValueError, match="already"):
        sm.attach_smear(model)
    with pytest.raises(ValueError, match="shape"):
        sm.attach_smear(models.make_model(SMALL, seed=0), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="shape"):
        sm.attach_smear(models.make_model(SMALL, seed=0), torch.zeros(4))
    with pytest.raises(ValueError, match="attention"):
        sm.attach_smear(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError):
        sm.attach_smear(models.make_model(SMALL, seed=0), "0.5")
    plain = models.make_model(SMALL, seed=0)
    assert sm.smear_of(plain) is None and sm.smear_of(torch.nn.Linear(3, 3)) is None
    with pytest.raises(ValueError, match="attach_smear"):
        sm.smear_sigma(plain)
    with pytest.raises(ValueError, match="attach_smear"), sm.smear_disabled(plain):
        pass


def test_train_config_is_chapter_5s_with_fewer_steps():
    assert sm.TRAINING == TrainConfig(
        steps=400, lr=3e-3, batch_size=32, checkpoint_steps=tuple(range(0, 401, 10)), desc="smeared"
    )
    assert (sm.TRAINING.lr, sm.TRAINING.batch_size, sm.TRAINING.optimizer) == (
        models.TRAINING.lr,
        models.TRAINING.batch_size,
        models.TRAINING.optimizer,
    )


def test_train_model_plain_and_alpha():
    config = TrainConfig(steps=2, lr=1e-2, batch_size=4, checkpoint_steps=(0,), progress=False)
    model, history = sm.train_model(SMALL, seed=0, alpha=-1.0, train_config=config)
    torch.testing.assert_close(sm.sigma_of_state(history.checkpoints[0]), torch.sigmoid(torch.full((2, 2), -1.0)))
    plain, history = sm.train_model(SMALL, seed=0, smeared=False, train_config=config)
    assert sm.smear_of(plain) is None and sm.STATE_KEY not in history.checkpoints[0]


def test_train_model_is_make_model_then_fit():
    config = TrainConfig(steps=3, lr=1e-2, batch_size=4, checkpoint_steps=(3,), seed=9, progress=False)
    model, history = sm.train_model(SMALL, seed=1, train_config=config)
    by_hand = sm.make_model(SMALL, seed=1)
    manual = models.fit(by_hand, SMALL, 1, train_config=config)
    assert torch.equal(history.loss, manual.loss)
    for key, value in by_hand.state_dict().items():
        assert torch.equal(model.state_dict()[key], value)


def test_arm_training_gives_each_arm_its_steps():
    for arm, steps in sm.ARM_STEPS.items():
        config = sm.arm_training(arm)
        assert config.steps == steps and config.checkpoint_steps == tuple(range(0, steps + 1, 10))
        assert (config.lr, config.batch_size) == (sm.TRAINING.lr, sm.TRAINING.batch_size)
    assert set(sm.ARM_STEPS) == set(sm.ARMS)
    with pytest.raises(ValueError, match="arm must be one of"):
        sm.arm_training("3 layers")


def test_run_with_smear_is_attach_smear_for_one_pass_and_leaves_nothing_attached():
    from lib.induction import ablation

    toks = tokens()
    alpha = torch.tensor([[-1.0, 2.0], [0.5, -3.0]])
    plain = models.make_model(SMALL, seed=4)
    smeared = sm.make_model(SMALL, seed=4, alpha=alpha)
    with torch.inference_mode():
        assert torch.allclose(sm.run_with_smear(plain, toks, alpha), smeared(toks), atol=1e-6)
    assert ablation.hooks_on(plain) == 0 and sm.smear_of(plain) is None
    with pytest.raises(ValueError, match="alpha"):
        sm.run_with_smear(plain, toks, torch.zeros(2))
    with pytest.raises(ValueError, match="plain model"):
        sm.run_with_smear(smeared, toks, alpha)


def test_hand_built_smeared_head_copies_through_the_smear_alone():
    from dataclasses import replace

    from lib.induction import scores

    model = sm.hand_built_model(16, 25)
    assert model.cfg.n_layers == 1 and sm.smear_sigma(model).item() == 0.0
    config = replace(models.config_of(model), min_repeat=8, max_repeat=8)
    toks, period = sequences.repeated_sequences(32, sequences.seeded_generator(0), config)
    mask = sequences.repeat_mask(period, config)
    with torch.inference_mode():
        loss = per_token_loss(model, toks)
        with sm.smear_disabled(model):
            off = per_token_loss(model, toks)
    assert scores.masked_mean(loss, mask) < 0.01
    assert scores.masked_mean(off, mask) > math.log(15)  # without the shift it copies the current token
    with pytest.raises(ValueError, match="strength"):
        sm.hand_built_model(strength=0.0)


def test_sigma_trajectory_reads_the_steps_asked_for_in_order():
    states = {step: {sm.STATE_KEY: torch.full((1, 2), float(step)), "other": torch.zeros(3)} for step in (0, 10, 20)}
    got = sm.sigma_trajectory(states, [20, 0])
    torch.testing.assert_close(got, torch.sigmoid(torch.tensor([[[20.0, 20.0]], [[0.0, 0.0]]])))
    with pytest.raises(ValueError, match="not stored: \\[5\\]"):
        sm.sigma_trajectory(states, [0, 5])
    with pytest.raises(ValueError, match="at least one"):
        sm.sigma_trajectory(states, [])


def test_load_mixed_bench_reads_the_shipped_runs_and_rejects_other_files(tmp_path):
    from lib.induction import mixed

    data = sm.load_mixed_bench()
    assert data["steps"][0] == 0 and len(data["runs"]) >= 3
    for run in data["runs"].values():
        for arm in ("1 layer", "1 layer, smeared"):
            assert all(len(run[arm]["icl"][kind]) == len(data["steps"]) for kind in mixed.POSITION_KINDS)
            assert set(run[arm]["final losses"]) == {"early", *mixed.POSITION_KINDS}
        assert len(run["1 layer, smeared"]["sigma"]) == data["settings"]["n_heads"]
    with pytest.raises(ValueError, match="run bench/smear_mixed.py"):
        sm.load_mixed_bench(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"runs": {}}')
    with pytest.raises(ValueError, match=r"lacks \['settings', 'steps'\]"):
        sm.load_mixed_bench(tmp_path / "other.json")
