"""Out-of-context reasoning in causal language models: fine-tune on sentences, rank candidate answers.

One pipeline for any model with the Hugging Face causal-LM interface (``model(input_ids).logits``) and
a fast tokenizer (``PreTrainedTokenizerFast``):

- **offline**: a word-level tokenizer built here from the task's own text (:func:`word_tokenizer`) and
  a small randomly initialised GPT-2-style model (:func:`tiny_gpt2`): nothing is downloaded;
- **pretrained**: :func:`load_pretrained` (``AutoModelForCausalLM`` / ``AutoTokenizer``) for a model
  from the hub or a local folder; chapter 4 loads one through :func:`load_if_enabled`, only when the learner
  switches the section on (:func:`pretrained_enabled`) and :func:`hub_available` says the hub can be reached.

Then the same functions: :func:`fine_tune` on :meth:`SentenceTask.train_sentences` with
:func:`lib.core.train.train`, :func:`score_questions` (sum of the candidate's token log-probabilities after
the prompt, batched) and :func:`mean_rank_per_pair` (:func:`lib.ocr.sentences.mean_rank` per relation pair).

Prior knowledge (:func:`run_prior_knowledge`): pre-train the tiny model on a "world" of known people
whose implication follows one rule, then fine-tune copies of it, and of the same model without
pre-training, on new people under each rule (:class:`PriorExperiment`, :class:`PriorRun`).
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

from lib.core import seeds, validate
from lib.core.device import check_device
from lib.core.train import History, TrainConfig, model_device, train
from lib.ocr.sentences import SentenceTask

if TYPE_CHECKING:  # transformers is imported only when a function needs it (it is slow to import)
    from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast


SentenceBatch = tuple[Tensor, Tensor]
"""``(ids, mask)``, both ``(batch, max_tokens)``: int64 token ids and a bool mask (True = real token)."""

UNK, PAD, BOS, EOS = "[UNK]", "[PAD]", "[BOS]", "[EOS]"

HUB_HOST = "huggingface.co"

PRETRAINED_ENV = "CIRCUITS_PRETRAINED"
"""Environment variable that switches chapter 4's pretrained section on (``1``, ``true``, ``yes`` or ``on``)."""

PRETRAINED_TRAINING = TrainConfig(steps=300, lr=1e-4, batch_size=32, desc="pretrained LM")
"""Chapter 4's fine-tuning of a pretrained model (and ``bench/pretrained_time.py``'s, which times it)."""

PRETRAINED_RANK_BATCH = 64
"""Rows per forward pass when chapter 4 ranks a pretrained model's candidates."""

_YES = ("1", "true", "yes", "on")


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
    seed: int = seeds.seed(0)

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
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _YES:
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


def pretrained_enabled(run: bool) -> bool:
    """Whether chapter 4's pretrained section is switched on: ``run`` (the chapter's flag) or :data:`PRETRAINED_ENV`."""
    if not isinstance(run, bool):
        raise ValueError(f"run must be True or False, got {run!r}")
    return run or os.environ.get(PRETRAINED_ENV, "").strip().lower() in _YES


def load_if_enabled(
    name: str, run: bool, device: torch.device | str | None = None
) -> tuple[nn.Module, PreTrainedTokenizerBase] | None:
    """:func:`load_pretrained` ``name`` if the section is on (:func:`pretrained_enabled`) and the hub answers.

    The hub is asked (:func:`hub_available`) only when the section is on, and nothing is downloaded unless both
    hold. Prints a line or two saying which case applies; returns ``None`` when skipped.
    """
    if not pretrained_enabled(run):
        print(  # two lines: the book's code column is 79 characters
            f"The pretrained section ({name}) is off: to run it, set\n"
            f"RUN_PRETRAINED = True (or the environment variable {PRETRAINED_ENV}=1)."
        )
        return None
    if not hub_available():
        print(f"The model hub cannot be reached: the pretrained section ({name}) is skipped.")
        return None
    print(f"Loading {name} from the hub (or its local cache).")
    return load_pretrained(name, device)


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
    """A ``make_batch(batch_size, generator)`` for :func:`lib.core.train.train`: sentences drawn uniformly
    with replacement (on the generator's device, the CPU in ``train``), returned on the device of ``ids``; a batch
    is ``(ids, mask)``, both (batch, max_tokens)."""

    def make_batch(batch_size: int, generator: torch.Generator) -> SentenceBatch:
        pick = torch.randint(0, len(ids), (batch_size,), generator=generator, device=generator.device)
        pick = pick.to(ids.device)
        return ids[pick], mask[pick]

    return make_batch


def lm_loss(model: nn.Module, batch: SentenceBatch) -> Tensor:
    """Mean next-token cross-entropy over the real (unpadded) tokens of a batch ``(ids, mask)``.

    For a GPT-2 model (``config.model_type == "gpt2"``, such as :func:`tiny_gpt2`'s) the output layer is applied
    only at the positions that have a real next token, ``(n_targets, d_model) -> (n_targets, vocab)``: the same
    loss as from the full ``(batch, max_tokens, vocab)`` logits, without computing the logits of padding. When the
    batch is padded on the right (every row's real tokens first, as :func:`encode_sentences` makes it), it passes
    no attention mask: a real token attends only to earlier tokens, all of them real, so causal attention alone
    gives it the same output, and attention takes its faster causal path.
    """
    ids, mask = batch
    keep = mask[:, 1:]
    if getattr(getattr(model, "config", None), "model_type", None) == "gpt2":
        body: nn.Module = model.transformer  # type: ignore[assignment]
        head: nn.Module = model.lm_head  # type: ignore[assignment]
        if bool((keep <= mask[:, :-1]).all()):  # right padding: no real token after a padded one
            # embeddings looked up here: given input_ids without a mask, the model would warn about padding
            embed: nn.Module = body.wte  # type: ignore[assignment]
            hidden = body(inputs_embeds=embed(ids), use_cache=False).last_hidden_state
        else:
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
    """Train ``model`` in place on ``sentences`` (next-token loss on every token) with :func:`lib.core.train.train`."""
    ids, mask = encode_sentences(tokenizer, sentences, model_device(model))
    return train(model, sentence_batches(ids, mask), lm_loss, config)
