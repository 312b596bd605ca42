"""lib.core.validate: each check returns a good value unchanged and names the argument, the rule and the value."""

import re

import pytest
import torch

from lib.core import validate


@pytest.mark.parametrize("value", [1, 7, 2**40])
def test_positive_int_returns_the_value(value):
    assert validate.positive_int("steps", value) == value


@pytest.mark.parametrize("value", [0, -3, 1.0, True, "2", None])
def test_positive_int_rejects(value):
    with pytest.raises(ValueError, match=r"steps must be a positive integer, got"):
        validate.positive_int("steps", value)


def test_non_negative_and_at_least():
    assert validate.non_negative_int("n", 0) == 0
    with pytest.raises(ValueError, match="n must be a non-negative integer, got -1"):
        validate.non_negative_int("n", -1)
    with pytest.raises(ValueError, match=r"batch_size must be an integer >= 3 \(one per group\), got 2"):
        validate.int_at_least("batch_size", 2, 3, "one per group")


def test_index():
    assert validate.index("layer", 1, 2) == 1
    for bad in (2, -1, True, 1.0):
        with pytest.raises(ValueError, match=r"layer must be an integer in \[0, 1\]"):
            validate.index("layer", bad, 2)


def test_seed():
    assert validate.seed(2**63 - 1) == 2**63 - 1
    for bad in (-1, 2**63, False, 0.5):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
            validate.seed(bad)


def test_fraction():
    assert validate.fraction("train_fraction", 0.5) == 0.5
    for bad in (0, 1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            validate.fraction("train_fraction", bad)


def test_unit_interval():
    assert [validate.unit_interval("share", v) for v in (0, 0.25, 1)] == [0.0, 0.25, 1.0]
    for bad in (-0.1, 1.5, True, "0.5", float("nan")):
        with pytest.raises(ValueError, match=r"share must be a number in \[0, 1\]"):
            validate.unit_interval("share", bad)


def test_one_of():
    assert validate.one_of("kind", "merged", ("factorized", "merged")) == "merged"
    with pytest.raises(ValueError, match=r"kind must be one of \['factorized', 'merged'\], got 'both'"):
        validate.one_of("kind", "both", ("factorized", "merged"))


def test_token_batch():
    tokens = torch.zeros(2, 5, dtype=torch.int64)
    assert validate.token_batch(tokens) is tokens
    for bad, got in (
        (torch.zeros(5, dtype=torch.int64), "shape (5,) torch.int64"),
        (torch.zeros(2, 5), "shape (2, 5) torch.float32"),
        ([[1]], "list"),
    ):
        with pytest.raises(ValueError, match=rf"tokens must be a \(batch, seq\) int64 tensor, got {re.escape(got)}"):
            validate.token_batch(bad)


def test_token_ids_and_range():
    copy = torch.tensor([0, 31])
    assert validate.token_range(validate.token_ids(copy, ("n",)), 32) is copy
    for bad, got in (
        (torch.tensor([[0, 1]]), r"shape \(1, 2\) torch.int64"),
        (torch.tensor([0.0]), r"shape \(1,\) torch.float32"),
    ):
        with pytest.raises(ValueError, match=rf"copy must be a \(n,\) int64 tensor, got {got}"):
            validate.token_ids(bad, ("n",), "copy")
    for empty in (torch.zeros(0, 5, dtype=torch.int64), torch.zeros(3, 0, dtype=torch.int64)):
        with pytest.raises(ValueError, match=r"tokens must hold at least one token id, got shape \((0, 5|3, 0)\)"):
            validate.token_batch(empty)
    for bad, value in ((torch.tensor([[3, 32]]), 32), (torch.tensor([[-1, 5]]), -1), (torch.tensor([[-2, 40]]), -2)):
        with pytest.raises(ValueError, match=rf"tokens must be token ids in \[0, 31\], got {value}$"):
            validate.token_range(bad, 32)


def test_float_tensor():
    loss = torch.ones(2, 3)
    assert validate.float_tensor("loss", loss, "(batch, seq - 1)", 2) is loss
    for bad, got in (
        (torch.ones(3), r"shape \(3,\) torch.float32"),
        (loss.long(), r"shape \(2, 3\) torch.int64"),
        (None, "NoneType"),
    ):
        with pytest.raises(ValueError, match=rf"loss must be a float tensor \(batch, seq - 1\), got {got}"):
            validate.float_tensor("loss", bad, "(batch, seq - 1)", 2)
    with pytest.raises(ValueError, match=r"loss must have at least one entry, got shape \(0, 3\)"):
        validate.float_tensor("loss", torch.ones(0, 3), "(batch, seq - 1)", 2)


def test_numbers():
    assert validate.positive_number("lr", 1e-3) == 1e-3
    assert validate.non_negative_number("weight_decay", 0) == 0.0
    for bad in (0, -1.0, float("inf"), float("nan"), True, "1"):
        with pytest.raises(ValueError, match="lr must be a finite positive number"):
            validate.positive_number("lr", bad)
    for bad in (-0.1, float("inf"), None):
        with pytest.raises(ValueError, match="weight_decay must be a finite number >= 0"):
            validate.non_negative_number("weight_decay", bad)


def test_unit_interval_pair():
    assert validate.unit_interval_pair("betas", (0.9, 0)) == (0.9, 0.0)
    for bad in ((0.9, 1.0), (0.9,), [0.9, 0.99], (0.9, float("nan")), (True, 0.5)):
        with pytest.raises(ValueError, match=r"betas must be a pair of numbers in \[0, 1\)"):
            validate.unit_interval_pair("betas", bad)
