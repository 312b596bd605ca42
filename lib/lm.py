"""Out-of-context reasoning in causal language models: fine-tune on sentences, rank candidate answers.

One pipeline for any model with the Hugging Face causal-LM interface (``model(input_ids).logits``) and
a fast tokenizer (``PreTrainedTokenizerFast``):

- **offline**: a word-level tokenizer built here from the task's own text (:func:`word_tokenizer`) and
  a small randomly initialised GPT-2-style model (:func:`tiny_gpt2`): nothing is downloaded;
- **pretrained**: :func:`load_pretrained` (``AutoModelForCausalLM`` / ``AutoTokenizer``) for a model
  from the hub or a local folder, used only when :func:`hub_available` says the hub can be reached.

Then the same functions: :func:`fine_tune` on :meth:`SentenceTask.train_sentences` with
:func:`lib.train.train`, :func:`score_questions` (sum of the candidate's token log-probabilities after
the prompt, batched) and :func:`mean_rank_per_pair` (:func:`lib.ocr.mean_rank` per relation pair).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lib import validate
from lib.device import check_device
from lib.ocr import Question, SentenceTask, Split, mean_rank
from lib.train import History, TrainConfig, model_device, train

if TYPE_CHECKING:  # transformers is imported only when a function needs it (it is slow to import)
    from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

SentenceBatch = tuple[Tensor, Tensor]
"""``(ids, mask)``, both ``(batch, max_tokens)``: int64 token ids and a bool mask (True = real token)."""

UNK, PAD, BOS, EOS = "[UNK]", "[PAD]", "[BOS]", "[EOS]"
HUB_HOST = "huggingface.co"


# ---------------------------------------------------------------------------------------------
# Tokenizer and models
# ---------------------------------------------------------------------------------------------


def word_tokenizer(texts: Sequence[str]) -> PreTrainedTokenizerFast:
    """A word-level ``PreTrainedTokenizerFast``: its vocabulary is every word and punctuation mark in ``texts``.

    Words are split at whitespace and punctuation (``"Paris."`` -> ``Paris``, ``.``); encoding adds a
    ``[BOS]`` token in front; unknown words map to ``[UNK]``. Token ids are assigned in order of first
    appearance, so the same texts give the same tokenizer.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("texts must be a non-empty sequence of strings")
    pre = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    vocab: dict[str, int] = {t: i for i, t in enumerate((UNK, PAD, BOS, EOS))}
    for text in texts:
        for word, _ in pre.pre_tokenize_str(text):
            vocab.setdefault(word, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre
    core.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with single spaces
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token=UNK, pad_token=PAD, bos_token=BOS, eos_token=EOS)


def task_tokenizer(task: SentenceTask) -> PreTrainedTokenizerFast:
    """:func:`word_tokenizer` over everything the task can show a model: training text, questions, candidates.

    Words of held-out implications are in the vocabulary only as candidate answers (they are also
    implications of training subjects), so the vocabulary leaks nothing about who has which answer.
    """
    questions = task.questions("train") + task.questions("test")
    candidates = [c for p in range(len(task.pairs)) for c in task.candidates(p)]
    return word_tokenizer(task.train_sentences() + [q.prompt for q in questions] + candidates)


@dataclass(frozen=True)
class TinyLMConfig:
    """A small GPT-2-style model trained from scratch; defaults run the chapter on a CPU.

    Attributes:
        n_layer: transformer blocks.
        d_model: residual-stream width.
        n_head: attention heads per block.
        max_len: longest sequence (positions), in tokens.
        seed: seeds the random initialisation.
    """

    n_layer: int = 2
    d_model: int = 64
    n_head: int = 4
    max_len: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_layer", "d_model", "n_head", "max_len"):
            validate.positive_int(name, getattr(self, name))
        validate.seed(self.seed)
        if self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_head={self.n_head}")


def tiny_gpt2(
    tokenizer: PreTrainedTokenizerBase, config: TinyLMConfig = TinyLMConfig(), device: torch.device | str | None = None
) -> nn.Module:
    """A randomly initialised ``GPT2LMHeadModel`` sized by ``config`` for ``tokenizer``'s vocabulary (no dropout)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    if not isinstance(config, TinyLMConfig):
        raise ValueError(f"config must be a TinyLMConfig, got {type(config).__name__}")
    device = check_device(device)
    cfg = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=config.max_len,
        n_embd=config.d_model,
        n_layer=config.n_layer,
        n_head=config.n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model: nn.Module = GPT2LMHeadModel(cfg)  # as nn.Module: mypy misreads transformers' wrapped .to()
    return model.to(device) if device is not None else model


def hub_available(timeout: float = 2.0, host: str = HUB_HOST) -> bool:
    """Whether the model hub can be reached: False at once if ``HF_HUB_OFFLINE`` is set, else a TCP connect
    to ``host`` that gives up after ``timeout`` seconds (name lookup included)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    result = [False]

    def connect() -> None:
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                result[0] = True
        except OSError:
            pass

    thread = threading.Thread(target=connect, daemon=True)  # a hung DNS lookup cannot hold the caller
    thread.start()
    thread.join(timeout)
    return result[0]


def load_pretrained(
    name: str, device: torch.device | str | None = None, dtype: torch.dtype | None = None
) -> tuple[nn.Module, PreTrainedTokenizerBase]:
    """``(model, tokenizer)`` from the hub or a local folder via ``AutoModelForCausalLM`` / ``AutoTokenizer``.

    A tokenizer without a padding token gets its end-of-text token as padding (only masked positions use it).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a model id or a folder, got {name!r}")
    device = check_device(device)
    tokenizer = AutoTokenizer.from_pretrained(name)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{name!r} has no fast tokenizer; this pipeline needs one")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model: nn.Module = (  # as nn.Module, like tiny_gpt2's
        AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
        if dtype is not None
        else AutoModelForCausalLM.from_pretrained(name)
    )
    return (model.to(device) if device is not None else model), tokenizer


# ---------------------------------------------------------------------------------------------
# Fine-tuning
# ---------------------------------------------------------------------------------------------


def _pad_id(tokenizer: PreTrainedTokenizerBase) -> int:
    for pid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if pid is not None:
            return pid
    return 0


def encode_sentences(
    tokenizer: PreTrainedTokenizerBase, sentences: Sequence[str], device: torch.device | str | None = None
) -> SentenceBatch:
    """Each sentence as one right-padded row, followed by the end-of-text token where the tokenizer has one.

    Returns:
        ``ids`` (n_sentences, max_tokens) int64 and ``mask`` (n_sentences, max_tokens) bool (True = real token).
    """
    sentences = list(sentences)
    if not sentences:
        raise ValueError("no sentences to encode")
    rows = [tokenizer(s)["input_ids"] for s in sentences]
    if tokenizer.eos_token_id is not None:
        rows = [r + [tokenizer.eos_token_id] for r in rows]
    return _pad(rows, _pad_id(tokenizer), device)


def _pad(rows: list[list[int]], pad_id: int, device: torch.device | str | None) -> SentenceBatch:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = True
    return ids.to(device), mask.to(device)


def sentence_batches(ids: Tensor, mask: Tensor) -> Callable[[int, torch.Generator], SentenceBatch]:
    """A ``make_batch(batch_size, generator)`` for :func:`lib.train.train`: sentences drawn uniformly
    with replacement, on the device of ``ids``; a batch is ``(ids, mask)``, both (batch, max_tokens)."""

    def make_batch(batch_size: int, generator: torch.Generator) -> SentenceBatch:
        pick = torch.randint(0, len(ids), (batch_size,), generator=generator, device=ids.device)
        return ids[pick], mask[pick]

    return make_batch


def lm_loss(model: nn.Module, batch: SentenceBatch) -> Tensor:
    """Mean next-token cross-entropy over the real (unpadded) tokens of a batch ``(ids, mask)``."""
    ids, mask = batch
    logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1]
    targets = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=-100)


def fine_tune(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, sentences: Sequence[str], config: TrainConfig
) -> History:
    """Train ``model`` in place on ``sentences`` (next-token loss on every token) with :func:`lib.train.train`."""
    ids, mask = encode_sentences(tokenizer, sentences, model_device(model))
    return train(model, sentence_batches(ids, mask), lm_loss, config)


# ---------------------------------------------------------------------------------------------
# Scoring and mean rank
# ---------------------------------------------------------------------------------------------


def score_questions(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, questions: Sequence[Question], batch_size: int = 512
) -> list[Tensor]:
    """Log-probability of every candidate as the continuation of its question's prompt.

    The score of a candidate is the sum, over its tokens, of the log-probability the model gives each
    token after the prompt and the candidate's earlier tokens (``prompt + " " + candidate``).

    Returns:
        one ``(n_candidates,)`` float CPU tensor per question, in order.

    Raises:
        ValueError: no questions, or a question whose candidates lack its answer.
    """
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
    starts = [len(prompts[qi]) for qi in owner]
    for row, qi in zip(rows, owner):
        # the candidate's tokens must be exactly what follows the prompt's own tokens
        if len(row) <= len(prompts[qi]) or row[: len(prompts[qi])] != prompts[qi]:
            raise ValueError(
                f"tokens of {questions[qi].prompt!r} + a candidate do not extend the prompt's tokens; "
                f"cannot tell the candidate's tokens apart"
            )
    device = model_device(model)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # similar lengths together: less padding
    scores = torch.empty(len(rows), dtype=torch.float64)
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for lo in range(0, len(order), batch_size):
            chunk = order[lo : lo + batch_size]
            ids, mask = _pad([rows[i] for i in chunk], _pad_id(tokenizer), device)
            logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1].float()
            # log p(token t+1) = its logit - logsumexp over the vocabulary, (batch, width - 1), without a
            # second (batch, width, vocab) tensor: the vocabulary of a pretrained model is large
            token_logp = logits.gather(-1, ids[:, 1:, None])[..., 0] - logits.logsumexp(-1)
            positions = torch.arange(ids.shape[1] - 1, device=device)
            start = torch.tensor([starts[i] for i in chunk], device=device)
            # token t+1 belongs to the candidate when start <= t+1 < length
            keep = (positions[None] + 1 >= start[:, None]) & mask[:, 1:]
            scores[chunk] = (token_logp * keep).sum(1).double().cpu()
    model.train(was_training)
    out, i = [], 0
    for q in questions:
        out.append(scores[i : i + len(q.candidates)].float())
        i += len(q.candidates)
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
    """Mean rank (:func:`lib.ocr.mean_rank`) of the questions of each relation pair: pair index -> mean rank.

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
    prompts = {
        (p, task.pairs[p].questions[f].format(s=task.names[s]))
        for p in range(len(task.pairs))
        for f in forms
        for s in range(len(task.names))
        if task.pair_of[s] == p
    }
    return [q for q in questions if (q.pair, q.prompt) in prompts]


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
