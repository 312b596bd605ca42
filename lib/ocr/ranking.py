"""Scoring a language model's candidate answers, and the mean rank of the right one per relation pair
(chapter 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from lib.core import validate
from lib.core.train import History, TrainConfig, model_device
from lib.ocr.lm import _pad, _pad_id, fine_tune
from lib.ocr.sentences import Question, SentenceTask, mean_rank
from lib.ocr.split import Split

if TYPE_CHECKING:  # transformers is imported only when a function needs it (it is slow to import)
    from transformers import PreTrainedTokenizerBase


def score_questions(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, questions: Sequence[Question], batch_size: int = 512
) -> list[Tensor]:
    """Log-probability of every candidate as the continuation of its question's prompt.

    The score of a candidate is the sum, over its tokens, of the log-probability the model gives each
    token after the prompt and the candidate's earlier tokens (``prompt + " " + candidate``). To score
    the same questions many times (during training), build a :class:`CandidateScorer` once.

    Returns:
        one ``(n_candidates,)`` float CPU tensor per question, in order.

    Raises:
        ValueError: no questions, or a question whose candidates lack its answer.
    """
    return CandidateScorer(tokenizer, questions, batch_size)(model)


class CandidateScorer:
    """:func:`score_questions` for a fixed list of questions: tokenized once, then called with a model.

    A candidate that is a single token after its prompt is scored from one forward pass of the prompt
    alone: the log-probability of that token at the prompt's last position, which is the number the
    full text ``prompt + " " + candidate`` gives (causal attention: later tokens cannot change it).
    Longer candidates are scored from the full text, in padded batches of ``batch_size`` rows.
    """

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, questions: Sequence[Question], batch_size: int = 512
    ) -> None:
        questions = list(questions)
        if not questions:
            raise ValueError("empty evaluation set: no questions to score")
        validate.positive_int("batch_size", batch_size)
        for qi, q in enumerate(questions):
            if not isinstance(q.answer, int) or not 0 <= q.answer < len(q.candidates):
                raise ValueError(
                    f"question {qi} ({q.prompt!r}): answer index {q.answer!r} is not among its "
                    f"{len(q.candidates)} candidates (the candidate list must contain the answer)"
                )
        prompts = tokenizer([q.prompt for q in questions])["input_ids"]
        owner = [qi for qi, q in enumerate(questions) for _ in q.candidates]
        rows = tokenizer([f"{q.prompt} {c}" for q in questions for c in q.candidates])["input_ids"]
        for row, qi in zip(rows, owner):
            # the candidate's tokens must be exactly what follows the prompt's own tokens
            if len(row) <= len(prompts[qi]) or row[: len(prompts[qi])] != prompts[qi]:
                raise ValueError(
                    f"tokens of {questions[qi].prompt!r} + a candidate do not extend the prompt's tokens; "
                    f"cannot tell the candidate's tokens apart"
                )
        self.sizes = [len(q.candidates) for q in questions]
        self.batch_size = batch_size
        self.pad_id = _pad_id(tokenizer)
        # single-token candidates, grouped by question: (question, its rows, their tokens)
        single: dict[int, tuple[list[int], list[int]]] = {}
        self.multi: list[int] = []
        for i, (row, qi) in enumerate(zip(rows, owner)):
            if len(row) == len(prompts[qi]) + 1:
                single.setdefault(qi, ([], []))
                single[qi][0].append(i)
                single[qi][1].append(row[-1])
            else:
                self.multi.append(i)
        # similar lengths together: less padding
        self.single = sorted(
            ((prompts[qi], torch.tensor(r), torch.tensor(t)) for qi, (r, t) in single.items()), key=lambda x: len(x[0])
        )
        self.multi.sort(key=lambda i: len(rows[i]))
        self.rows = rows
        self.starts = [len(prompts[qi]) for qi in owner]

    def __call__(self, model: nn.Module) -> list[Tensor]:
        """The scores of every question's candidates under ``model``: one ``(n_candidates,)`` float CPU tensor
        per question, in order."""
        device = model_device(model)
        scores = torch.empty(len(self.rows), dtype=torch.float64)
        was_training = model.training
        model.eval()
        with torch.inference_mode():
            for lo in range(0, len(self.single), self.batch_size):
                group = self.single[lo : lo + self.batch_size]
                ids, mask = _pad([prompt for prompt, _, _ in group], self.pad_id, device)
                logits = model(input_ids=ids, attention_mask=mask.long()).logits
                last = mask.sum(1) - 1
                logp = logits[torch.arange(len(group), device=device), last].float().log_softmax(-1).cpu().double()
                for j, (_, rows, tokens) in enumerate(group):
                    scores[rows] = logp[j, tokens]
            for lo in range(0, len(self.multi), self.batch_size):
                chunk = self.multi[lo : lo + self.batch_size]
                ids, mask = _pad([self.rows[i] for i in chunk], self.pad_id, device)
                logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1].float()
                # log p(token t+1) = its logit - logsumexp over the vocabulary, (batch, width - 1), without a
                # second (batch, width, vocab) tensor: the vocabulary of a pretrained model is large
                token_logp = logits.gather(-1, ids[:, 1:, None])[..., 0] - logits.logsumexp(-1)
                positions = torch.arange(ids.shape[1] - 1, device=device)
                start = torch.tensor([self.starts[i] for i in chunk], device=device)
                # token t+1 belongs to the candidate when start <= t+1 < length
                keep = (positions[None] + 1 >= start[:, None]) & mask[:, 1:]
                scores[chunk] = (token_logp * keep).sum(1).cpu().double()
        model.train(was_training)
        out, i = [], 0
        for size in self.sizes:
            out.append(scores[i : i + size].float())
            i += size
        return out


def score_candidates(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, prompt: str, candidates: Sequence[str]
) -> Tensor:
    """Log-probability of each candidate after one prompt: ``(len(candidates),)`` float (as :func:`score_questions`)."""
    candidates = tuple(candidates)
    if not candidates:
        raise ValueError("no candidates to score")
    return score_questions(model, tokenizer, [Question(-1, -1, prompt, candidates, 0)])[0]


def mean_rank_by_pair(questions: Sequence[Question], scores: Sequence[Tensor]) -> dict[int, float]:
    """Mean rank (:func:`lib.ocr.sentences.mean_rank`) of the questions of each relation pair: pair index -> mean rank.

    Raises:
        ValueError: no questions, or a different number of score rows and questions.
    """
    questions = list(questions)
    if not questions:
        raise ValueError("empty evaluation set: no questions to rank")
    if len(scores) != len(questions):
        raise ValueError(f"got {len(scores)} score rows for {len(questions)} questions")
    out = {}
    for p in sorted({q.pair for q in questions}):
        mine = [i for i, q in enumerate(questions) if q.pair == p]
        out[p] = mean_rank([scores[i] for i in mine], [questions[i].answer for i in mine])
    return out


def mean_rank_per_pair(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    task: SentenceTask,
    group: Split = "test",
    forms: Sequence[int] | None = None,
    batch_size: int = 512,
) -> dict[str, float]:
    """Mean rank of the correct implication per relation pair, over ``task.questions(group)``.

    Args:
        forms: which question forms of each pair to ask (indices into ``RelationPair.questions``);
            ``None`` asks all.

    Returns:
        pair name -> mean rank (0 = always ranked first; chance is ``(k - 1) / 2`` for k candidates).
    """
    questions = select_forms(task, task.questions(group), forms)
    ranks = mean_rank_by_pair(questions, score_questions(model, tokenizer, questions, batch_size))
    return {task.pairs[p].name: r for p, r in ranks.items()}


def select_forms(task: SentenceTask, questions: Sequence[Question], forms: Sequence[int] | None) -> list[Question]:
    """The questions whose prompt uses one of the question forms ``forms`` of its pair (``None``: all)."""
    if forms is None:
        return list(questions)
    n_forms = min(len(p.questions) for p in task.pairs)
    if not forms:
        raise ValueError(f"forms must be a non-empty list of question-form indices in [0, {n_forms}), got []")
    for form in forms:
        validate.index("a question form", form, n_forms, f"forms={list(forms)!r}")
    return [q for q in questions if q.form in forms]


def chance_rank(task: SentenceTask) -> dict[str, float]:
    """Mean rank of a random ordering per pair: ``(k - 1) / 2`` for ``k`` candidates."""
    return {pair.name: (len(task.candidates(p)) - 1) / 2 for p, pair in enumerate(task.pairs)}


@dataclass(frozen=True)
class RankResult:
    """Mean ranks per relation pair around one fine-tuning run (pair name -> mean rank).

    Attributes:
        before: held-out (test) subjects, before fine-tuning.
        after: held-out subjects, after fine-tuning.
        train_after: training subjects (whose implications were in the training text), after fine-tuning.
        history: the training run.
    """

    before: dict[str, float]
    after: dict[str, float]
    train_after: dict[str, float]
    history: History


def fine_tune_and_rank(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    task: SentenceTask,
    config: TrainConfig,
    forms: Sequence[int] | None = None,
    batch_size: int = 512,
) -> RankResult:
    """The whole pipeline: rank held-out implications, fine-tune on ``task.train_sentences()``, rank again."""
    before = mean_rank_per_pair(model, tokenizer, task, "test", forms, batch_size)
    history = fine_tune(model, tokenizer, task.train_sentences(), config)
    after = mean_rank_per_pair(model, tokenizer, task, "test", forms, batch_size)
    train_after = mean_rank_per_pair(model, tokenizer, task, "train", forms, batch_size)
    return RankResult(before, after, train_after, history)


def swap_pairs(task: SentenceTask, tokenizer: PreTrainedTokenizerBase) -> list[tuple[int, int]]:
    """Held-out subjects paired for the name-swap control (:func:`name_swap_share`), greedily in index order.

    Two subjects pair up when they belong to the same rule, have different implications, and their names have the
    same number of tokens with no token in common, with each other or with any name already paired: every swap then
    touches one token of one paired name only (a token that is one pair's first name and another pair's last name
    would be swapped twice, and the swaps would no longer make a question its partner's).
    """
    ids = {i: tokenizer(task.names[i], add_special_tokens=False)["input_ids"] for i in task.test_subjects}
    pairs: list[tuple[int, int]] = []
    used: set[int] = set()  # the tokens of the names paired so far
    free = list(task.test_subjects)
    while free:
        i = free.pop(0)
        if set(ids[i]) & used:
            continue
        for j in free:
            if (
                task.pair_of[i] == task.pair_of[j]
                and task.implication_of[i] != task.implication_of[j]
                and len(ids[i]) == len(ids[j])
                and not set(ids[i]) & set(ids[j])
                and not set(ids[j]) & used
            ):
                pairs.append((i, j))
                used |= set(ids[i]) | set(ids[j])
                free.remove(j)
                break
    return pairs


def name_swap_share(
    model: nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    task: SentenceTask,
    positions: Sequence[int],
    form: int = 0,
    batch_size: int = 512,
) -> float:
    """Share of the :func:`swap_pairs` questions on which the partner's answer scores above the subject's own, with
    the input embeddings of the two names' tokens at ``positions`` (indices into a name's tokens) swapped.

    ``positions=()`` measures the unswapped model; all positions make each question the partner's exactly (the same
    input vectors), so only a part of a name says where the answer is read from. The weights are restored after.
    """
    pairs = swap_pairs(task, tokenizer)
    if not pairs:
        raise ValueError("no held-out subjects to pair: swap_pairs found none")
    ids = {i: tokenizer(task.names[i], add_special_tokens=False)["input_ids"] for pair in pairs for i in pair}
    n_tokens = min(len(v) for v in ids.values())
    for k in positions:
        validate.index("a name-token position", k, n_tokens, f"positions={list(positions)!r}")
    by_subject = {q.subject: q for q in select_forms(task, task.questions("test"), [form])}
    questions = [by_subject[i] for pair in pairs for i in pair]
    partners = [p for i, j in pairs for p in (j, i)]
    weight = model.get_input_embeddings().weight  # type: ignore[operator]
    saved = weight.detach().clone()
    try:
        with torch.no_grad():
            for i, j in pairs:
                for k in positions:
                    a, b = ids[i][k], ids[j][k]
                    weight[a], weight[b] = saved[b], saved[a]
        scores = score_questions(model, tokenizer, questions, batch_size)
    finally:
        with torch.no_grad():
            weight.copy_(saved)
    above = [
        float(s[q.candidates.index(task.implication_of[p])] > s[q.answer])
        for s, q, p in zip(scores, questions, partners)
    ]
    return sum(above) / len(above)
