"""Training the one-layer model on the symbolic OCR task (:class:`lib.ocr.symbolic.SymbolicTask`), measuring it at
every checkpoint, and reading its learned output-value map (chapters 2 and 3)."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor

from lib.core import validate
from lib.core.device import check_device
from lib.core.train import History, TrainConfig, train
from lib.ocr.onelayer import TRAINING, OneLayer, OneLayerConfig, per_seed_batches, per_seed_loss
from lib.ocr.proximal import nuclear_proximal
from lib.ocr.split import TRAIN_GROUPS
from lib.ocr.symbolic import SymbolicTask


def _candidate_position(answers: Tensor, candidates: Tensor) -> Tensor:
    """``(N,)``: where each answer sits in ``candidates``; every answer must be one of them."""
    match = answers[:, None] == candidates[None, :].to(answers.device)
    if not match.any(1).all():
        outside = answers[~match.any(1)][:5].tolist()
        raise ValueError(f"every answer must be one of the candidates; {outside} are not in {candidates.tolist()[:10]}")
    return match.float().argmax(1)


def candidate_accuracy(logits: Tensor, answers: Tensor, candidates: Tensor) -> float:
    """Fraction of examples whose answer has the largest logit among ``candidates`` (e.g. the implication values).

    Args:
        logits: ``(N, V)``; answers: ``(N,)`` token ids (each one of ``candidates``); candidates: ``(K,)``
            token ids.
    """
    position = _candidate_position(answers, candidates)
    return float((logits[:, candidates].argmax(1) == position).float().mean())


def candidate_loss(logits: Tensor, answers: Tensor, candidates: Tensor) -> float:
    """Mean cross-entropy of the answers with the softmax taken over ``candidates`` only (other tokens ignored).

    Args:
        logits: ``(N, V)``; answers: ``(N,)`` token ids (each one of ``candidates``); candidates: ``(K,)``
            token ids.
    Returns:
        ``mean_n -log softmax(logits[n, candidates])[position of answers[n]]``; ``log K`` for a model that
        scores the candidates alike.
    """
    position = _candidate_position(answers, candidates)
    return float(F.cross_entropy(logits[:, candidates].float(), position))


@dataclass
class OCRRun:
    """A batch of models trained on the OCR task, with losses measured at every checkpoint.

    Attributes:
        model: the trained :class:`OneLayer` (``S`` members).
        history: the training run (batch losses ``(steps, S)``, parameter snapshots at the checkpoints).
        steps: ``(K,)`` checkpoint steps.
        train_loss: ``(S, K)`` mean of the three training groups' losses (each on a fixed evaluation set).
        test_loss: ``(S, K)`` loss on the held-out implications.
    """

    model: OneLayer
    history: History
    steps: Tensor
    train_loss: Tensor
    test_loss: Tensor


def train_on_task(
    task: SymbolicTask,
    model_config: OneLayerConfig,
    train_config: TrainConfig = TRAINING,
    *,
    eval_every: int | None = None,
    eval_per_subject: int = 2,
    device: torch.device | str | None = None,
    nuclear_strength: float | None = None,
) -> OCRRun:
    """Train ``model_config.n_seeds`` members on ``task.train_batch`` (each member its own batches).

    Args:
        task: the symbolic task; its ``vocab_size`` must equal ``model_config.vocab_size``.
        eval_every: measure train/test loss (and snapshot the parameters) every this many steps, plus step 0
            and the last step; ``None`` measures only before and after training.
        eval_per_subject: examples per subject in the fixed evaluation sets.
        nuclear_strength: merged models only: follow every step by the proximal step of
            ``nuclear_strength * ||W_OV||_*`` (:func:`lib.ocr.proximal.nuclear_proximal`); ``None``: no penalty.
    """
    if task.vocab_size != model_config.vocab_size:
        raise ValueError(
            f"model vocab_size={model_config.vocab_size} does not match the task's vocab_size={task.vocab_size}"
        )
    if eval_every is not None:
        validate.positive_int("eval_every", eval_every)
    device = check_device(device) or torch.device("cpu")
    model = OneLayer(model_config).to(device)
    every = eval_every or train_config.steps
    steps = tuple(sorted(set(range(0, train_config.steps + 1, every)) | {train_config.steps}))
    train_sets = [task.fixed(g, eval_per_subject, device=device) for g in TRAIN_GROUPS]
    test_set = task.fixed("test_implications", eval_per_subject, device=device)

    def evaluate(m: OneLayer) -> tuple[Tensor, Tensor]:
        train = torch.stack([per_seed_loss(m, s) for s in train_sets]).mean(0)
        return train, per_seed_loss(m, test_set)

    config = replace(train_config, checkpoint_steps=steps)
    penalty = nullcontext() if nuclear_strength is None else nuclear_proximal(model, nuclear_strength)
    with penalty:
        history = train(
            model, per_seed_batches(task.train_batch, model_config.n_seeds), per_seed_loss, config, evaluate=evaluate
        )
    train_loss = torch.stack([history.evals[s][0] for s in steps], 1).float().cpu()
    test_loss = torch.stack([history.evals[s][1] for s in steps], 1).float().cpu()
    return OCRRun(model, history, torch.tensor(steps), train_loss, test_loss)


def subject_order(task: SymbolicTask) -> tuple[Tensor, Tensor]:
    """Display order of the subjects: grouped by fact value, training subjects first within each group.

    Returns:
        ``order`` ``(n_subjects,)`` subject indices, and ``train_columns``: positions in ``order`` of the
        subjects whose implication is trained.
    """
    n = len(task.subject_ids)
    fact_index = (task.fact_of[:, None] == task.fact_value_ids[None, :]).float().argmax(1)
    is_test = ~torch.isin(torch.arange(n), task.train_subjects)
    order = torch.argsort(fact_index * 2 + is_test.long(), stable=True)
    return order, torch.nonzero(~is_test[order]).flatten()


def ov_blocks(ov: Tensor, task: SymbolicTask, order: Tensor | None = None, centre: bool = True) -> dict[str, Tensor]:
    """The answer x subject blocks of one output-value matrix ``ov (d, d)``, columns in ``order``.

    Args:
        centre: subtract from every column of a block its mean over the block's rows. Adding one number to a
            whole column of the map changes no prediction (the softmax ignores a common shift of the logits),
            so the centred block shows only what matters: which answer value each subject prefers.
    Returns:
        ``{"implications": (n_values, n_subjects), "facts": (n_values, n_subjects)}``; row ``i`` of both
        blocks belongs to the same mapping ``b_i -> c_i`` of a rule.
    """
    order = subject_order(task)[0] if order is None else order
    cols = task.subject_ids[order].to(ov.device)
    ov = ov.detach()
    blocks = {
        "implications": ov[task.implication_value_ids.to(ov.device)][:, cols].cpu(),
        "facts": ov[task.fact_value_ids.to(ov.device)][:, cols].cpu(),
    }
    return {k: b - b.mean(0, keepdim=True) for k, b in blocks.items()} if centre else blocks
