"""The pretend accelerator (tests/core/fake_device.py) sees a cross-device mix as a GPU would, without a GPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorDeviceMismatchError, FakeTensorMode

from tests.core.fake_device import DeviceMixError, PretendTensor, pretend_accelerator, real

Case = Callable[[torch.device], object]

# name -> (op on the accelerator `d`, whether a GPU refuses it)
RULES: dict[str, tuple[Case, bool]] = {
    "matmul with a CPU matrix": (lambda d: torch.ones(3, 3, device=d) @ torch.ones(3, 3), True),
    "times a 0-dim CPU tensor": (lambda d: torch.ones(3, device=d) * torch.tensor(2.0), False),
    "cat with a CPU tensor": (lambda d: torch.cat([torch.ones(2, device=d), torch.ones(2)]), True),
    "where with a CPU condition": (
        lambda d: torch.where(torch.ones(2, dtype=torch.bool), torch.ones(2, device=d), 0),
        True,
    ),
    "gather with CPU indices": (
        lambda d: torch.ones(5, 3, device=d).gather(1, torch.zeros(5, 1, dtype=torch.long)),
        True,
    ),
    "equality with a CPU vector": (lambda d: torch.arange(3, device=d)[:, None] == torch.arange(3)[None, :], True),
    "indexing with CPU indices": (lambda d: torch.ones(5, device=d)[torch.tensor([1, 2])], False),
    "indexing with a CPU mask": (lambda d: torch.ones(5, device=d)[torch.ones(5, dtype=torch.bool)], False),
    "indexing a CPU tensor with device indices": (lambda d: torch.ones(5)[torch.tensor([1, 2], device=d)], True),
    "CPU values put at CPU indices": (
        lambda d: torch.zeros(3, device=d).index_put_((torch.tensor([0, 1]),), torch.ones(2)),
        True,
    ),
    "CPU values copied into a slice": (lambda d: torch.zeros(3, device=d)[:2].copy_(torch.ones(2)), False),
    "a CPU generator drawing on the device": (
        lambda d: torch.randint(0, 5, (3,), generator=torch.Generator().manual_seed(0), device=d),
        True,
    ),
    "a CPU draw moved to the device": (
        lambda d: torch.randint(0, 5, (3,), generator=torch.Generator().manual_seed(0)).to(d),
        False,
    ),
}
# Where torch's FakeTensorMode runs the case on a CPU-only build, it must agree (the others it cannot run at all:
# "PyTorch is not linked with support for cuda devices", or it lets through what a GPU refuses).
FAKE_RUNS = (
    "matmul with a CPU matrix",
    "times a 0-dim CPU tensor",
    "cat with a CPU tensor",
    "where with a CPU condition",
    "gather with CPU indices",
)


@pytest.mark.parametrize("name", RULES)
def test_rules(name: str) -> None:
    case, refused = RULES[name]
    with pretend_accelerator() as device:
        if refused:
            with pytest.raises(DeviceMixError):
                case(device)
        else:
            case(device)


@pytest.mark.parametrize("name", FAKE_RUNS)
def test_rules_agree_with_fake_tensor_mode(name: str) -> None:
    case, refused = RULES[name]
    with FakeTensorMode():
        if refused:
            with pytest.raises(FakeTensorDeviceMismatchError):
                case(torch.device("cuda"))
        else:
            case(torch.device("cuda"))


def scaled_distance(x: torch.Tensor) -> torch.Tensor:
    """A planted bug: a constant made on the CPU meets ``x`` wherever ``x`` lives."""
    centre = torch.zeros(x.shape[-1])
    return (x - centre).norm(dim=-1)


def test_a_planted_cpu_tensor_is_caught() -> None:
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    with pretend_accelerator() as device:
        with pytest.raises(DeviceMixError, match="mixes devices"):
            scaled_distance(x.to(device))
    scaled_distance(x)  # on the CPU alone it runs


def test_results_are_the_cpu_results() -> None:
    """The pretend device computes with real numbers: a model's loss and gradients are the CPU's."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(5, 3)
    x = torch.randn(8, 5, generator=torch.Generator().manual_seed(1))
    layer(x).square().mean().backward()
    expected = layer.weight.grad.clone()
    layer.zero_grad()
    with pretend_accelerator() as device:
        layer.to(device)
        loss = layer(x.to(device)).square().mean()
        loss.backward()
        assert isinstance(layer.weight.grad, PretendTensor) and layer.weight.device == device
        torch.testing.assert_close(real(layer.weight.grad), expected, rtol=0, atol=0)
        assert isinstance(loss.item(), float)


def test_mps_refuses_float64_and_svd() -> None:
    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    with pretend_accelerator(mps=True) as device:
        with pytest.raises(DeviceMixError, match="float64"):
            w.to(device).double()
        with pytest.raises(DeviceMixError, match="not implemented on mps"):
            torch.linalg.svdvals(w.to(device))
        torch.linalg.svdvals(w.to(device).cpu().double())  # the convention: to the CPU first


def test_moves_under_inference_mode() -> None:
    """Under ``inference_mode`` torch hands ``.to`` to the pretend device undecomposed: it still moves and converts."""
    x = torch.arange(3.0)
    with pretend_accelerator() as device, torch.inference_mode():
        moved = x.to(device)
        assert moved.device == device and moved.to(moved) is moved
        assert moved.to(torch.float64).dtype == torch.float64 and moved.to(torch.float64).device == device
        layer = torch.nn.Linear(3, 1).to(device)
        assert layer.weight.device == device and layer(moved).device == device
        back = moved.to("cpu")
        assert type(back) is torch.Tensor and torch.equal(back, x)
        with pytest.raises(DeviceMixError):
            x.to(device) + torch.ones(3)
