import pytest
import torch

from lib.checks import CheckFailed, compare, same


def test_compare_passes_and_prints(capsys):
    compare("double", lambda x: 2 * x, lambda x: x + x, [(1,), (torch.arange(3),)])
    assert "PASSED double: all 2 cases" in capsys.readouterr().out


def test_compare_names_input_expected_and_got():
    with pytest.raises(CheckFailed, match=r"case 2 of 2 differs(.|\n)*input:    3(.|\n)*expected: 6(.|\n)*got:      7"):
        compare("double", lambda x: 2 * x + (x == 3), lambda x: 2 * x, [(1,), (3,)])


def test_compare_not_implemented():
    def stub(x):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="not implemented yet"):
        compare("stub", stub, lambda x: x, [(1,)])


def test_same_tolerances_and_shapes():
    assert same(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    assert not same(torch.tensor([1.0, 2.0]), torch.tensor([[1.0, 2.0]]))
    assert not same(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert same({"a": [1.0, 2]}, {"a": [1.0, 2]})
    assert not same([1, 2], [1, 2, 3])
