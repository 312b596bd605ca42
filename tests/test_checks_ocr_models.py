"""lib.onelayer.candidate_accuracy, the reference of chapter 2's accuracy exercise, rejects a bad input.

(The exercise checks themselves are tested, one table row each, in tests/test_checks.py.)
"""

import pytest
import torch

from lib import onelayer


def test_candidate_accuracy_rejects_answers_outside_the_candidates():
    with pytest.raises(ValueError, match="candidates"):
        onelayer.candidate_accuracy(torch.zeros(1, 4), torch.tensor([0]), torch.tensor([2, 3]))
