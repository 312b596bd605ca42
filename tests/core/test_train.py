import pytest
import torch

from lib.core.train import TrainConfig, progress_enabled, train


def regression_task(n_out=1):
    """y = x @ w_true: a task a linear model solves exactly."""
    w_true = torch.tensor([[1.0], [-2.0], [0.5]]).repeat(1, n_out)

    def make_batch(batch_size, generator):
        x = torch.randn(batch_size, 3, generator=generator, device=generator.device)
        return x, x @ w_true.to(x.device)

    return make_batch


def mse(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def test_loss_falls_and_history_shape():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    hist = train(model, regression_task(), mse, TrainConfig(steps=300, lr=0.05, batch_size=32))
    assert hist.loss.shape == (300,)
    assert hist.loss.device.type == "cpu"
    assert hist.loss[-20:].mean() < 1e-3 < hist.loss[0]


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        runs.append(train(model, regression_task(), mse, TrainConfig(steps=20, lr=0.01, seed=5)).loss)
    assert torch.equal(runs[0], runs[1])


def test_checkpoints_and_evaluate():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    seen_grad_mode = []

    def evaluate(m):
        seen_grad_mode.append(torch.is_grad_enabled())
        return m.weight.sum().item()

    hist = train(model, regression_task(), mse, TrainConfig(steps=10, checkpoint_steps=(0, 5, 10)), evaluate=evaluate)
    assert hist.checkpoint_steps == [0, 5, 10]
    assert set(hist.evals) == {0, 5, 10}
    assert seen_grad_mode == [False, False, False]
    # the final checkpoint is the trained model, the first one differs from it
    assert torch.equal(hist.checkpoints[10]["weight"], model.weight.detach())
    assert not torch.equal(hist.checkpoints[0]["weight"], hist.checkpoints[10]["weight"])
    assert hist.evals[10] == pytest.approx(model.weight.sum().item())


def test_vector_loss_trains_seeds_independently():
    """Two seeds batched in one model train exactly as each alone (Adam is element-wise)."""
    torch.manual_seed(0)
    w0 = torch.randn(2, 3, 1)

    class Batched(torch.nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = torch.nn.Parameter(w.clone())

        def forward(self, x):  # x (seeds, batch, 3) -> (seeds, batch, 1)
            return torch.bmm(x, self.w)

    target = torch.tensor([[1.0], [-2.0], [0.5]])

    def make_batch(batch_size, generator):
        x = torch.randn(2, batch_size, 3, generator=generator)
        return x, x @ target

    def loss_fn(m, batch):
        x, y = batch
        return ((m(x) - y) ** 2).mean(dim=(1, 2))  # one loss per seed

    both = Batched(w0)
    hist = train(both, make_batch, loss_fn, TrainConfig(steps=30, lr=0.05))
    assert hist.loss.shape == (30, 2)
    # seed 1 alone: same batches for that seed, same start
    alone = Batched(w0[1:])

    def make_batch_seed1(batch_size, generator):
        x, y = make_batch(batch_size, generator)
        return x[1:], y[1:]

    train(alone, make_batch_seed1, loss_fn, TrainConfig(steps=30, lr=0.05))
    torch.testing.assert_close(alone.w.detach(), both.w.detach()[1:])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": 0}, "steps must be a positive integer"),
        ({"steps": -5}, "steps must be a positive integer"),
        ({"steps": 2.5}, "steps must be a positive integer"),
        ({"lr": 0}, "lr must be a finite positive number"),
        ({"lr": -1e-3}, "lr must be a finite positive number"),
        ({"lr": float("inf")}, "lr must be a finite positive number"),
        ({"lr": float("nan")}, "lr must be a finite positive number"),
        ({"lr": True}, "lr must be a finite positive number"),
        ({"lr": "1e-3"}, "lr must be a finite positive number"),
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"optimizer": "lion"}, r"optimizer must be one of \['adamw', 'adam', 'sgd'\], got 'lion'"),
        ({"weight_decay": -0.1}, "weight_decay must be a finite number >= 0"),
        ({"weight_decay": float("inf")}, "weight_decay must be a finite number >= 0"),
        ({"betas": (0.9, 1.0)}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"betas": (-0.1, 0.999)}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"betas": (0.9,)}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"betas": (0.9, 0.99, 0.999)}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"betas": (0.9, float("nan"))}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"betas": [0.9, 0.999]}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"steps": 10, "checkpoint_steps": (11,)}, r"checkpoint step must be an integer in \[0, 10\], got 11"),
        ({"steps": 10, "checkpoint_steps": (0, True)}, r"checkpoint step must be an integer in \[0, 10\], got True"),
        ({"seed": -1}, r"seed must be an integer in \[0, 2\*\*63\)"),
        ({"warmup_steps": -1}, "warmup_steps must be a non-negative integer, got -1"),
        ({"warmup_steps": 2.5}, "warmup_steps must be a non-negative integer, got 2.5"),
    ],
)
def test_bad_config_is_a_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)


def test_good_config_edge_values_are_accepted():
    config = TrainConfig(steps=1, lr=1, weight_decay=0, betas=(0.0, 0.0), checkpoint_steps=(0, 1), seed=2**63 - 1)
    assert config.betas == (0.0, 0.0) and config.checkpoint_steps == (0, 1)


def test_model_without_parameters():
    with pytest.raises(ValueError, match="no trainable parameters"):
        train(torch.nn.Identity(), regression_task(), mse, TrainConfig(steps=1))


def test_progress_quiet_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert progress_enabled() is False
    assert progress_enabled(True) is True
    monkeypatch.delenv("CI")
    monkeypatch.setenv("CIRCUITS_PROGRESS", "0")
    assert progress_enabled() is False
    monkeypatch.setenv("CIRCUITS_PROGRESS", "1")
    assert progress_enabled() is True


class OneWeight(torch.nn.Module):
    """A single float64 weight; the loss ``w`` has gradient 1, so an SGD step moves ``w`` by exactly the step's lr."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))


def learning_rates(steps, warmup_steps, lr=0.1):
    """The learning rate of every step of an SGD run, read off the moves of :class:`OneWeight` (no batch needed)."""
    config = TrainConfig(
        steps=steps, lr=lr, optimizer="sgd", warmup_steps=warmup_steps, checkpoint_steps=tuple(range(steps + 1))
    )
    hist = train(OneWeight(), lambda batch_size, generator: None, lambda m, batch: m.w, config)
    w = torch.stack([hist.checkpoints[s]["w"] for s in range(steps + 1)])
    return (w[:-1] - w[1:]).tolist()


def test_warmup_rises_linearly_then_stays():
    """Step t (1-based) uses lr * min(1, t / warmup_steps)."""
    got = learning_rates(steps=7, warmup_steps=4, lr=0.1)
    assert got == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1], abs=1e-15)


@pytest.mark.parametrize("warmup", [0, 1])
def test_no_warmup_is_a_constant_rate(warmup):
    assert learning_rates(steps=5, warmup_steps=warmup, lr=0.1) == pytest.approx([0.1] * 5, abs=1e-15)


def test_no_warmup_is_the_plain_loop():
    """warmup_steps=0 trains exactly as a hand-written AdamW loop with the same batches."""
    config = TrainConfig(steps=20, lr=0.05, batch_size=8, weight_decay=0.01, seed=3, warmup_steps=0)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    by_hand = torch.nn.Linear(3, 1)
    by_hand.load_state_dict(model.state_dict())
    hist = train(model, regression_task(), mse, config)

    make_batch = regression_task()
    generator = torch.Generator().manual_seed(3)
    optimizer = torch.optim.AdamW(by_hand.parameters(), lr=0.05, weight_decay=0.01)
    losses = []
    for _ in range(20):
        loss = mse(by_hand, make_batch(8, generator))
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert hist.loss.tolist() == losses
    assert torch.equal(model.weight, by_hand.weight)


def test_batches_are_drawn_on_a_cpu_generator_and_moved_to_the_model():
    """One data stream on every device: make_batch gets a CPU generator; its batch is moved to the model's device."""
    seen = []

    def make_batch(batch_size, generator):
        seen.append(generator.device.type)
        return regression_task()(batch_size, generator)

    def loss(model, batch):
        seen.append(batch[0].device.type)
        return mse(model, batch)

    torch.manual_seed(0)
    train(torch.nn.Linear(3, 1), make_batch, loss, TrainConfig(steps=2, lr=0.01))
    assert seen == ["cpu", "cpu"] * 2
