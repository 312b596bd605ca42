"""The exercise checks of chapters 2-3: a stub fails, a wrong answer fails, the reference passes."""

import pytest
import torch

from lib import checks, onelayer, theory


def stub(*args):
    raise NotImplementedError


CASES = [
    (
        checks.check_factorized_forward,
        onelayer.forward_reference,
        lambda W_O, W_V, W_KQ, tokens: onelayer.forward_reference(W_O, W_V, W_KQ.T, tokens),
    ),  # K and Q swapped
    (
        checks.check_candidate_accuracy,
        onelayer.candidate_accuracy,
        lambda logits, answers, candidates: float((logits.argmax(1) == answers).float().mean()),
    ),  # argmax over all tokens
    (
        checks.check_multiclass_margins,
        theory.multiclass_margins,
        lambda logits, targets: logits.gather(1, targets[:, None]).squeeze(1) - logits.max(1).values,
    ),  # includes itself
    (checks.check_svt, theory.svt, lambda W, tau: W.sign() * (W.abs() - tau).clamp_min(0)),  # entry-wise shrinkage
]


@pytest.mark.parametrize("check, reference, wrong", CASES, ids=[c[0].__name__ for c in CASES])
def test_check(check, reference, wrong, capsys):
    check(reference)
    assert "PASSED" in capsys.readouterr().out
    with pytest.raises(checks.CheckFailed, match="not implemented"):
        check(stub)
    with pytest.raises(checks.CheckFailed, match="differs"):
        check(wrong)


def test_candidate_accuracy_rejects_answers_outside_the_candidates():
    with pytest.raises(ValueError, match="candidates"):
        onelayer.candidate_accuracy(torch.zeros(1, 4), torch.tensor([0]), torch.tensor([2, 3]))
