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

Prior knowledge (:func:`run_prior_knowledge`): pre-train the tiny model on a "world" of known people
whose implication follows one rule, then fine-tune copies of it, and of the same model without
pre-training, on new people under each rule (:class:`PriorExperiment`, :class:`PriorRun`).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lib import validate
from lib.device import check_device
from lib.ocr import (
    PAIRS,
    Question,
    RelationPair,
    SentenceConfig,
    SentenceTask,
    Split,
    answer_index,
    build_sentences,
    fictitious_names,
    mean_rank,
)
from lib.train import History, TrainConfig, model_device, snapshot, train

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
    return word_tokenizer(_task_texts(task))


def _task_texts(task: SentenceTask) -> list[str]:
    questions = task.questions("train") + task.questions("test")
    candidates = [c for p in range(len(task.pairs)) for c in task.candidates(p)]
    return task.train_sentences() + [q.prompt for q in questions] + candidates


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
    """A randomly initialised ``GPT2LMHeadModel`` sized by ``config`` for ``tokenizer``'s vocabulary (no dropout).

    Its activation is GPT-2's, the GELU with the tanh approximation, computed by PyTorch's fused kernel
    (``"gelu_pytorch_tanh"``: the same function as GPT-2's default ``"gelu_new"``, faster on a CPU).
    """
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
        activation_function="gelu_pytorch_tanh",
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
    """Mean next-token cross-entropy over the real (unpadded) tokens of a batch ``(ids, mask)``.

    For a GPT-2 model (``config.model_type == "gpt2"``, such as :func:`tiny_gpt2`'s) the output layer is applied
    only at the positions that have a real next token, ``(n_targets, d_model) -> (n_targets, vocab)``: the same
    loss as from the full ``(batch, max_tokens, vocab)`` logits, without computing the logits of padding.
    """
    ids, mask = batch
    keep = mask[:, 1:]
    if getattr(getattr(model, "config", None), "model_type", None) == "gpt2":
        body: nn.Module = model.transformer  # type: ignore[assignment]
        head: nn.Module = model.lm_head  # type: ignore[assignment]
        hidden = body(input_ids=ids, attention_mask=mask.long(), use_cache=False).last_hidden_state
        return F.cross_entropy(head(hidden[:, :-1][keep]).float(), ids[:, 1:][keep])
    logits = model(input_ids=ids, attention_mask=mask.long()).logits[:, :-1]
    targets = ids[:, 1:].masked_fill(~keep, -100)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=-100)


def control_sentences(task: SentenceTask) -> list[str]:
    """The training text of the no-facts control: only the training subjects' sentences.

    For every subject of ``task.train_subjects`` in order, its fact sentences then its implication sentences; no
    sentence about a held-out subject, so the held-out subjects' facts are missing from it.
    """
    if not isinstance(task, SentenceTask):
        raise ValueError(f"task must be a SentenceTask, got {type(task).__name__}")
    return [s for i in task.train_subjects for s in task.fact_sentences(i) + task.implication_sentences(i)]


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
                logp = logits[torch.arange(len(group), device=device), last].float().log_softmax(-1).double().cpu()
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
                scores[chunk] = (token_logp * keep).sum(1).double().cpu()
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
        (
            p,
            task.pairs[p]
            .questions[f]
            .format(s=task.names[s], r1=task.pairs[p].fact_relation, r2=task.pairs[p].implication_relation),
        )
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


# ---------------------------------------------------------------------------------------------
# Prior knowledge: pre-train on a world that follows one rule, fine-tune on new people
# ---------------------------------------------------------------------------------------------

Init = Literal["pre-trained", "from scratch"]
"""Where fine-tuning starts: the model pre-trained on the world, or the same initial weights untrained."""
INITS: tuple[Init, ...] = get_args(Init)


@dataclass(frozen=True)
class PriorConfig:
    """Known and new people for the prior-knowledge experiment (:func:`build_prior`).

    Every rule uses all of its fact values (all 20 cities for the city pairs), so every rule's
    questions have the same candidates and the same chance level.

    Attributes:
        n_known: people of the pre-training ("world") text, dealt evenly onto the fact values; each
            has every fact sentence and every implication sentence under the first rule.
        n_new: people of the fine-tuning text: the same names, facts and split under every rule.
        train_fraction: share of each fact value's new people whose implication is in the
            fine-tuning text (rounded half up, as in :class:`lib.ocr.SentenceConfig`).
        rules: relation pairs that differ only in their implication map (same fact values, fact
            sentences, implication values and questions); exactly one of them has ``link == "causal"``
            (:attr:`lib.ocr.RelationPair.link`), and the world follows that one (:attr:`world_rule`),
            wherever it stands in the tuple.
        seed: names, who is known, fact values and split.
    """

    n_known: int = 200
    n_new: int = 100
    train_fraction: float = 0.2
    rules: tuple[RelationPair, ...] = tuple(next(p for p in PAIRS if p.link == k) for k in ("causal", "counterfactual"))
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.rules or not all(isinstance(r, RelationPair) for r in self.rules):
            raise ValueError("rules must be a non-empty tuple of RelationPair")
        first = self.rules[0]
        n_values = len(first.fact_values)
        for rule in self.rules[1:]:
            same = (
                set(rule.fact_values) == set(first.fact_values)
                and {c for _, c in rule.implication_map} == {c for _, c in first.implication_map}
                and (rule.fact_relation, rule.implication_relation) == (first.fact_relation, first.implication_relation)
                and (rule.fact_templates, rule.implication_templates, rule.questions)
                == (first.fact_templates, first.implication_templates, first.questions)
            )
            if not same:
                raise ValueError(
                    f"rules must differ only in their implication map: {rule.name!r} and {first.name!r} differ "
                    f"in fact values, implication values, relations, templates or questions"
                )
        if len({r.name for r in self.rules}) != len(self.rules):
            raise ValueError(f"rule names must be distinct, got {[r.name for r in self.rules]}")
        links = [r.link for r in self.rules]
        if links.count("causal") != 1:
            raise ValueError(
                f"rules must hold exactly one rule with link 'causal' (the rule the world follows), got links {links}"
            )
        validate.int_at_least("n_known", self.n_known, 2 * n_values, f"two known people per fact value, {n_values}")
        validate.positive_int("n_new", self.n_new)
        validate.fraction("train_fraction", self.train_fraction)
        validate.seed(self.seed)

    @property
    def world_rule(self) -> RelationPair:
        """The rule the known people follow: the one rule of :attr:`rules` whose ``link`` is ``"causal"``."""
        return next(r for r in self.rules if r.link == "causal")


@dataclass(frozen=True)
class PriorData:
    """The texts and the tokenizer of one seed of the prior-knowledge experiment.

    Attributes:
        config: how it was built.
        world: the known people under ``config.world_rule``; all of their sentences are pre-training text.
        new: the new people under each rule, in the order of ``config.rules`` (same names, facts and split).
        tokenizer: a :func:`word_tokenizer` over every text of ``world`` and ``new``.
    """

    config: PriorConfig
    world: SentenceTask
    new: tuple[SentenceTask, ...]
    tokenizer: PreTrainedTokenizerFast

    @property
    def rule_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.config.rules)

    def world_sentences(self) -> list[str]:
        """The pre-training text: every known person's fact and implication sentences."""
        w = self.world
        return [s for i in range(len(w.names)) for s in w.fact_sentences(i) + w.implication_sentences(i)]


def build_prior(config: PriorConfig = PriorConfig()) -> PriorData:
    """The known people, the new people under each rule and their tokenizer, deterministically from ``config``.

    Names come from :func:`lib.ocr.fictitious_names`: the first ``n_known`` are the known people, the
    others the new ones, so no new person appears in the pre-training text.
    """
    if not isinstance(config, PriorConfig):
        raise ValueError(f"config must be a PriorConfig, got {type(config).__name__}")
    c = config
    names = fictitious_names(c.n_known + c.n_new, c.seed)
    n_values = len(c.world_rule.fact_values)
    world = build_sentences(
        SentenceConfig(c.n_known, n_values, 0.5, (c.world_rule,), tuple(names[: c.n_known]), c.seed)
    )
    new = tuple(
        build_sentences(SentenceConfig(c.n_new, n_values, c.train_fraction, (rule,), tuple(names[c.n_known :]), c.seed))
        for rule in c.rules
    )
    world_text = [s for i in range(c.n_known) for s in world.fact_sentences(i) + world.implication_sentences(i)]
    tokenizer = word_tokenizer(world_text + [t for task in new for t in _task_texts(task)])
    return PriorData(c, world, new, tokenizer)


def rule_ranks(
    model: nn.Module,
    data: PriorData,
    group: Split = "test",
    form: int = 0,
    batch_size: int = 512,
) -> list[float]:
    """Mean rank of each rule's answer for the new people of ``group``, from one scoring pass.

    The questions are those of ``data.new[0]`` in question form ``form``; entry ``r`` ranks the
    implication the person has under ``data.config.rules[r]`` among the same candidates.

    Returns:
        one mean rank per rule, in the order of ``data.config.rules``.
    """
    return _RuleRanker(data, group, form, batch_size)(model)


class _RuleRanker:
    """:func:`rule_ranks` with the questions tokenized once, for evaluations during training."""

    def __init__(self, data: PriorData, group: Split, form: int, batch_size: int) -> None:
        base = data.new[0]
        questions = select_forms(base, base.questions(group), [form])
        self.scorer = CandidateScorer(data.tokenizer, questions, batch_size)
        self.answers = [
            [answer_index(q.candidates, task.implication_of[q.subject]) for q in questions] for task in data.new
        ]

    def __call__(self, model: nn.Module) -> list[float]:
        scores = self.scorer(model)
        return [mean_rank(scores, answers) for answers in self.answers]


def world_rank(model: nn.Module, data: PriorData, form: int = 0, batch_size: int = 512) -> float:
    """Mean rank of the known people's own implications (all of them were pre-training text)."""
    w = data.world
    questions = select_forms(w, w.questions("train") + w.questions("test"), [form])
    return mean_rank(score_questions(model, data.tokenizer, questions, batch_size), [q.answer for q in questions])


@dataclass(frozen=True)
class PriorExperiment:
    """Every setting of the prior-knowledge experiment; :func:`run_prior_knowledge` gives all of them one seed.

    Attributes:
        data: the known and new people and the rules.
        model: the tiny model (all arms of a seed start from the same initial weights).
        pretrain: training on :meth:`PriorData.world_sentences`.
        fine_tune: training on each rule's :meth:`lib.ocr.SentenceTask.train_sentences`; held-out ranks
            are measured at its ``checkpoint_steps`` and after the last step.
        form: the question form asked (index into the rules' ``questions``; 0: ``"{s} speaks"``).
    """

    data: PriorConfig = PriorConfig()
    model: TinyLMConfig = TinyLMConfig(n_layer=1)
    pretrain: TrainConfig = TrainConfig(steps=400, lr=5e-3, batch_size=32, weight_decay=0.1, desc="pre-training")
    fine_tune: TrainConfig = TrainConfig(
        steps=250,
        lr=5e-3,
        batch_size=32,
        weight_decay=0.1,
        checkpoint_steps=(0, 50, 100, 150, 200),
        desc="fine-tuning",
    )
    form: int = 0

    def __post_init__(self) -> None:
        for name, kind in (("data", PriorConfig), ("model", TinyLMConfig), ("pretrain", TrainConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if not isinstance(self.fine_tune, TrainConfig):
            raise ValueError(f"fine_tune must be a TrainConfig, got {type(self.fine_tune).__name__}")
        validate.index("form", self.form, min(len(r.questions) for r in self.data.rules))

    @property
    def eval_steps(self) -> tuple[int, ...]:
        """Fine-tuning steps at which held-out ranks are measured: the checkpoints and the last step."""
        return tuple(sorted(set(self.fine_tune.checkpoint_steps) | {self.fine_tune.steps}))


@dataclass(frozen=True)
class PriorRun:
    """One seed of the prior-knowledge experiment.

    Attributes:
        steps: fine-tuning steps at which held-out ranks were measured (0: before fine-tuning).
        rules: rule names, in the order of the config's rules.
        held_out: ``(init, fine-tuned rule)`` -> ``(len(steps), len(rules))`` float: entry ``[t, r]``
            is the held-out new people's mean rank of their implication under rule ``r`` at step ``steps[t]``.
        train_after: ``(init, fine-tuned rule)`` -> mean rank of the fine-tuned rule's implication of the
            new people whose implication was in the fine-tuning text, after fine-tuning.
        world_after_pretraining: mean rank of the known people's implications after pre-training.
        world_before_pretraining: the same at initialisation.
        seconds: wall time of the whole run.
    """

    steps: tuple[int, ...]
    rules: tuple[str, ...]
    held_out: dict[tuple[Init, str], Tensor]
    train_after: dict[tuple[Init, str], float]
    world_after_pretraining: float
    world_before_pretraining: float
    seconds: float = field(default=0.0, compare=False)

    def rank(self, init: Init, trained: str, answer: str | None = None) -> Tensor:
        """``(len(steps),)``: held-out mean rank of rule ``answer``'s implication (default: the fine-tuned
        rule's) along fine-tuning on rule ``trained``, from initialisation ``init``."""
        validate.one_of("init", init, INITS)
        validate.one_of("trained", trained, self.rules)
        answer = trained if answer is None else validate.one_of("answer", answer, self.rules)
        return self.held_out[init, trained][:, self.rules.index(answer)]


def run_prior_knowledge(
    experiment: PriorExperiment = PriorExperiment(), seed: int = 0, device: torch.device | str | None = None
) -> PriorRun:
    """Pre-train once, then fine-tune on every rule from the pre-trained and from the untrained weights.

    ``seed`` replaces the seeds of ``experiment.data`` (people, split), ``model`` (initial weights),
    ``pretrain`` and ``fine_tune`` (batches). The untrained ("from scratch") arms start from exactly
    the initial weights that pre-training started from; every arm fine-tunes a copy.
    """
    if not isinstance(experiment, PriorExperiment):
        raise ValueError(f"experiment must be a PriorExperiment, got {type(experiment).__name__}")
    validate.seed(seed)
    start = time.perf_counter()
    e = experiment
    data = build_prior(dataclasses.replace(e.data, seed=seed))
    model = tiny_gpt2(data.tokenizer, dataclasses.replace(e.model, seed=seed), device)
    initial = snapshot(model)
    world_before = world_rank(model, data, e.form)
    fine_tune(model, data.tokenizer, data.world_sentences(), dataclasses.replace(e.pretrain, seed=seed))
    states: dict[Init, dict[str, Tensor]] = {"pre-trained": snapshot(model), "from scratch": initial}
    world_after = world_rank(model, data, e.form)
    config = dataclasses.replace(e.fine_tune, seed=seed, checkpoint_steps=e.eval_steps)
    held_out_ranks, train_ranks = _RuleRanker(data, "test", e.form, 512), _RuleRanker(data, "train", e.form, 512)
    held_out: dict[tuple[Init, str], Tensor] = {}
    train_after: dict[tuple[Init, str], float] = {}
    for init in INITS:
        for r, task in enumerate(data.new):
            arm = copy.deepcopy(model)
            arm.load_state_dict(states[init])
            ids, mask = encode_sentences(data.tokenizer, task.train_sentences(), model_device(arm))
            history = train(arm, sentence_batches(ids, mask), lm_loss, config, evaluate=held_out_ranks)
            name = data.rule_names[r]
            held_out[init, name] = torch.tensor([history.evals[s] for s in e.eval_steps])
            train_after[init, name] = train_ranks(arm)[r]
    return PriorRun(
        e.eval_steps, data.rule_names, held_out, train_after, world_after, world_before, time.perf_counter() - start
    )
