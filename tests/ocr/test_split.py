"""Unit tests of lib.ocr's train/test split of subjects and its metric (mean rank of the answer)."""

import pytest
import torch

from lib.ocr.sentences import SentenceConfig, answer_index, mean_rank
from lib.ocr.split import assign_groups, split_subjects


def test_split_subjects_first_of_each_group_trains():
    train, test = split_subjects([0, 1, 0, 1, 0, 1, 0, 1, 0, 1], 0.2)
    assert train == [0, 1] and test == [2, 3, 4, 5, 6, 7, 8, 9]
    assert split_subjects(["a", "a", "b", "b", "b"], 0.5) == ([0, 2, 3], [1, 4])  # 1.5 rounds up to 2


def test_assign_groups_balanced():
    subset, value = assign_groups(23, 3, 2, torch.Generator().manual_seed(0))
    assert sorted(torch.bincount(torch.tensor(subset)).tolist()) == [7, 8, 8]
    assert all(0 <= v < 2 for v in value)


def test_mean_rank():
    assert mean_rank(torch.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]]), torch.tensor([0, 2])) == 0.5
    assert mean_rank(torch.zeros(4, 5), [0, 1, 2, 3]) == 2.0  # all tied: chance
    assert mean_rank([[0.1, 0.9], [1.0, 2.0, 3.0]], [0, 0]) == 1.5  # ragged rows
    assert answer_index(("French", "German"), "German") == 1


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, True, "0.2"])
def test_bad_train_fraction(fraction):
    with pytest.raises(ValueError, match="train_fraction"):
        SentenceConfig(train_fraction=fraction)
    with pytest.raises(ValueError, match="train_fraction"):
        split_subjects([0, 0, 0], fraction)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: assign_groups(2, 3, 1, torch.Generator()), "fewer subjects"),
        (lambda: split_subjects([0], 0.5), "no t"),
        (lambda: split_subjects([], 0.5), "no subjects"),
        (lambda: mean_rank(torch.zeros(0, 3), []), "empty evaluation set"),
        (lambda: mean_rank([], []), "empty evaluation set"),
        (lambda: mean_rank(torch.zeros(2, 3), [0, 3]), "not among"),
        (lambda: mean_rank(torch.zeros(2, 3), [0, -1]), "not among"),
        (lambda: mean_rank(torch.zeros(2, 3), [0]), "answers"),
        (lambda: mean_rank(torch.zeros(3), [0, 1, 2]), "2-D"),
        (lambda: mean_rank(torch.tensor([[0.0, float("nan")]]), [0]), "finite"),
        (lambda: answer_index(("French", "German"), "Dutch"), "does not contain"),
    ],
)
def test_bad_input_raises_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()
