import pytest
import torch

from lib.core.train import TrainConfig
from lib.ocr.onelayer import OneLayer, OneLayerConfig, per_seed_loss
from lib.ocr.proximal import nuclear_proximal
from lib.ocr.symbolic import build_symbolic
from lib.ocr.theory import svt
from lib.ocr.training import train_on_task


def _one_sgd_step(model, batch, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    optimizer.zero_grad()
    per_seed_loss(model, batch).sum().backward()
    optimizer.step()


def test_each_step_is_followed_by_singular_value_thresholding():
    config = OneLayerConfig(16, parameterization="merged", n_seeds=2, init_scale=1.0)
    batch = (torch.randint(0, 16, (8, 5)), torch.randint(0, 16, (8,)))
    plain, penalized = OneLayer(config), OneLayer(config)
    _one_sgd_step(plain, batch, 0.1)
    with nuclear_proximal(penalized, 2.0):
        _one_sgd_step(penalized, batch, 0.1)
    for a, b in zip(plain.W_OV.detach(), penalized.W_OV.detach()):
        torch.testing.assert_close(b, svt(a, 0.1 * 2.0))
    assert (
        torch.linalg.matrix_norm(penalized.W_OV.detach(), "nuc")
        .lt(torch.linalg.matrix_norm(plain.W_OV.detach(), "nuc"))
        .all()
    )


def test_the_hook_is_removed_after_the_block_and_ignores_other_optimizers():
    config = OneLayerConfig(16, parameterization="merged", init_scale=1.0)
    model, other = OneLayer(config), OneLayer(config)
    batch = (torch.randint(0, 16, (8, 5)), torch.randint(0, 16, (8,)))
    before = model.W_OV.detach().clone()
    with nuclear_proximal(model, 1.0):
        _one_sgd_step(other, batch, 0.1)  # another model's step: model untouched
    torch.testing.assert_close(model.W_OV.detach(), before)
    reference = OneLayer(config)
    _one_sgd_step(model, batch, 0.1)  # outside the block: a plain step
    _one_sgd_step(reference, batch, 0.1)
    torch.testing.assert_close(model.W_OV.detach(), reference.W_OV.detach())


def test_train_on_task_with_a_nuclear_penalty_lowers_the_nuclear_norm():
    task = build_symbolic()
    config = OneLayerConfig(task.vocab_size, parameterization="merged", n_seeds=1)
    schedule = TrainConfig(steps=20, lr=1e-2, batch_size=30, progress=False)
    plain = train_on_task(task, config, schedule).model.W_OV.detach()
    penalized = train_on_task(task, config, schedule, nuclear_strength=0.5).model.W_OV.detach()
    assert torch.linalg.matrix_norm(penalized, "nuc") < torch.linalg.matrix_norm(plain, "nuc")


@pytest.mark.parametrize(
    "config, strength, match",
    [
        (OneLayerConfig(16, parameterization="factorized"), 1.0, "merged"),
        (OneLayerConfig(16, parameterization="merged"), 0.0, "strength"),
        (OneLayerConfig(16, parameterization="merged"), -1.0, "strength"),
    ],
)
def test_bad_input_raises(config, strength, match):
    with pytest.raises(ValueError, match=match):
        with nuclear_proximal(OneLayer(config), strength):
            pass
