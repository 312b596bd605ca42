"""The named natural-text runs of issue 29, one factor at a time, and the loop that trains one while it logs.

- ``B1``: chapter 8's two-layer run (:data:`lib.induction.natural.runs.RUNS`, ``L2_lr3e-3``: width 128, 8 heads of
  16, context 256, batch 64, AdamW lr 3e-3 after 500 warm-up steps, no LayerNorm, no weight decay, no clipping, the
  chapter's corpus and 1,024-token BPE) with **shortformer positions** (:mod:`lib.induction.natural.slim`);
- ``B2``: ``B1`` with pre-LayerNorm;
- ``A``: a published-style recipe: 2 layers, width 256, 8 heads of 32, pre-LayerNorm, shortformer, the code corpus
  of ``scripts/build_code_corpus.py`` and its 4,096-token BPE, context 512, batch 128, AdamW lr 1e-3, weight decay
  0.05, 500 warm-up steps, gradient norm clipped at 1.0, 8,000 steps (0.52 B tokens).

Every :data:`Recipe.every` steps the loop appends one JSON line to its log (:func:`measure`): the mean training loss
since the last line, the held-out loss and ICL score, the losses on both copies of an Olsson-style probe and every
head's chapter-5 prefix matching on it (:func:`lib.induction.scores.prefix_matching_score`), and every head's
previous-token score on held-out text.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal, TextIO, get_args

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from lib.core import seeds, validate
from lib.core.tokens import EVAL_SEED
from lib.core.train import TrainConfig, train
from lib.induction import scores, sequences
from lib.induction.natural import corpus, probes
from lib.induction.sequences import InductionConfig

Corpus = Literal["stdlib", "code"]

CORPORA: tuple[Corpus, ...] = get_args(Corpus)
"""``"stdlib"``: chapter 8's corpus and tokenizer (:mod:`lib.induction.natural.corpus`); ``"code"``: the code corpus
that ``scripts/build_code_corpus.py --tokenizer`` writes to :data:`CODE_CORPUS`."""

Data = Literal["text", "repeated random tokens"]

DATA_KINDS: tuple[Data, ...] = get_args(Data)
"""What a run trains on: ``"text"``, windows of its corpus; ``"repeated random tokens"``, chapter 5's task at the
model's vocabulary and context (:func:`random_repeats`), the check that the same code forms an induction head where
one is known to form. The held-out text and the probes are the corpus' either way."""

CODE_CORPUS = Path(__file__).resolve().parents[3] / "_build" / "code-corpus"
"""Where ``scripts/build_code_corpus.py`` writes the code corpus (``train.txt``, ``heldout.txt``, ``bpe4096.json``)."""


@dataclass(frozen=True)
class Recipe:
    """One natural-text run: the model, the corpus and the optimiser.

    Attributes:
        model: a :class:`lib.induction.natural.slim.SlimConfig` (its ``d_vocab`` is the corpus tokenizer's).
        corpus: one of :data:`CORPORA`.
        clip: the gradient norm is clipped to this before every step (0: no clipping).
        every: steps between two log lines (and checkpoints).
        data: one of :data:`DATA_KINDS`.
        repeat_share: the share of training windows that repeat a span of their own text
            (:func:`lib.induction.natural.corpus.plant_repeats`; 0: plain text). Held-out text and probes stay plain.
    """

    model: Any  # slim.SlimConfig; typed loosely so that this module imports without transformer_lens
    corpus: Corpus = "stdlib"
    steps: int = 18250
    lr: float = 3e-3
    batch_size: int = 64
    warmup_steps: int = 500
    weight_decay: float = 0.0
    clip: float = 0.0
    every: int = 100
    seed: int = seeds.seed(0)
    data: Data = "text"
    repeat_share: float = 0.0

    def __post_init__(self) -> None:
        validate.one_of("corpus", self.corpus, CORPORA)
        validate.one_of("data", self.data, DATA_KINDS)
        validate.unit_interval("repeat_share", self.repeat_share)
        if self.repeat_share and self.data != "text":
            raise ValueError(f"repeat_share applies to text only, got {self.repeat_share} with data {self.data!r}")
        validate.non_negative_number("clip", self.clip)
        validate.positive_int("every", self.every)
        self.train_config()  # checks the optimiser settings

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * (self.model.n_ctx - 1)

    def train_config(self, steps: int | None = None) -> TrainConfig:
        """The :class:`lib.core.train.TrainConfig` of this run, or of its first ``steps`` steps (a dry run)."""
        steps = self.steps if steps is None else steps
        return TrainConfig(
            steps=steps,
            lr=self.lr,
            batch_size=self.batch_size,
            weight_decay=self.weight_decay,
            warmup_steps=self.warmup_steps,
            checkpoint_steps=tuple(sorted({*range(0, steps + 1, self.every), steps})),
            seed=self.seed,
            progress=False,
        )


def _recipes() -> dict[str, Recipe]:
    from lib.induction.natural.slim import SlimConfig

    b1 = Recipe(SlimConfig(2, 8, 128, 16, 256, corpus.VOCAB, positions="shortformer"))
    return {
        "B1": b1,
        "B2": replace(b1, model=replace(b1.model, layer_norm=True)),
        "A": Recipe(
            SlimConfig(2, 8, 256, 32, 512, 4096, positions="shortformer", layer_norm=True),
            corpus="code",
            steps=8000,
            lr=1e-3,
            batch_size=128,
            warmup_steps=500,
            weight_decay=0.05,
            clip=1.0,
        ),
    }


@functools.cache
def recipes() -> dict[str, Recipe]:
    """The named runs ``B1``, ``B2``, ``A`` (see the module docstring), in the order the issue runs them."""
    return _recipes()


@functools.cache
def _code_tokenizer(path: Path) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def code_ids(split: Literal["train", "heldout"], limit: int | None = None, root: Path = CODE_CORPUS) -> torch.Tensor:
    """``(n,) int64`` token ids of the code corpus' ``split`` (its first ``limit`` characters, or all of it), encoded
    file by file with its 4,096-token BPE. The whole training text takes minutes on one core."""
    text = (root / f"{split}.txt").read_text(encoding="utf-8")
    if limit is not None:
        validate.positive_int("limit", limit)
        text = text[:limit]
    tokenizer = _code_tokenizer(root / "bpe4096.json")
    files = [f"# file: {part}" for part in text.split("# file: ") if part]
    ids = [i for encoding in tokenizer.encode_batch(files) for i in encoding.ids]
    return torch.tensor(ids, dtype=torch.int64)


def random_repeats(model: Any) -> InductionConfig:
    """Chapter 5's repeated random tokens (:mod:`lib.induction.sequences`) at a :class:`~lib.induction.natural.slim.
    SlimConfig`'s vocabulary and context: BOS, then a segment of 8 to ``(n_ctx - 1) // 2`` distinct random tokens
    repeated until the window is full."""
    return InductionConfig(vocab=model.d_vocab, seq_len=model.n_ctx, min_repeat=8, max_repeat=(model.n_ctx - 1) // 2)


def corpus_ids(recipe: Recipe, limit: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(training ids, held-out ids)`` of the recipe's corpus; ``limit``: the first ``limit`` characters of the
    training text only (a dry run)."""
    if recipe.corpus == "stdlib":
        train_ids = corpus.training_ids()
        return (train_ids if limit is None else corpus.encode(corpus.split_files(corpus.corpus_text())[0][:limit])), (
            corpus.held_out_ids()
        )
    return code_ids("train", limit), code_ids("heldout", limit)


def probe_pool(train_ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """The Olsson-style probe's tokens: frequency ranks ``OLSSON_SKIP + 1 .. 256`` of ``train_ids`` (BOS left out),
    as :func:`lib.induction.natural.probes.olsson_repeat_probe` draws them for chapter 8."""
    counts = torch.bincount(train_ids, minlength=vocab)
    counts[0] = -1  # BOS
    return counts.argsort(descending=True, stable=True)[probes.OLSSON_SKIP : 256]


@dataclass(frozen=True)
class Probes:
    """The fixed batches :func:`measure` reads: ``text`` ``(64, seq)`` held-out windows, ``repeat`` ``(32, seq)``
    BOS, ``(seq - 1) // 2`` distinct tokens of the pool and the same again (seq odd)."""

    text: torch.Tensor
    repeat: torch.Tensor


def make_probes(held_ids: torch.Tensor, pool: torch.Tensor, seq_len: int, device: torch.device | str) -> Probes:
    """:class:`Probes` of ``seq_len`` positions (the repeat probe one shorter when ``seq_len`` is even), seeded with
    :data:`lib.core.tokens.EVAL_SEED`."""
    g = torch.Generator().manual_seed(EVAL_SEED)
    text = corpus.windows(held_ids, torch.randint(0, len(held_ids) - seq_len, (64,), generator=g), seq_len)
    half = min((seq_len - 1) // 2, len(pool))
    rows = torch.stack([pool[torch.randperm(len(pool), generator=g)[:half]] for _ in range(32)])
    repeat = torch.cat([torch.zeros(32, 1, dtype=torch.int64), rows, rows], 1)
    return Probes(text.to(device), repeat.to(device))


def measure(model: Any, probe: Probes) -> dict[str, Any]:
    """What the loop logs at a checkpoint (see the module docstring); per-head scores as ``[layer][head]``."""
    loss, pattern = probes.loss_and_patterns(model, probe.text)
    seq = probe.text.shape[1]
    late = range(seq - 16, seq - 1)
    repeat_loss, repeat_pattern = probes.loss_and_patterns(model, probe.repeat)
    first, second = probes.copy_losses(repeat_loss)
    prefix = scores.prefix_matching_score(repeat_pattern, probe.repeat)
    return {
        "held_loss": loss.mean().item(),
        "icl": scores.icl_score(loss, probes.EARLY, late).item(),
        "repeat_first": first.item(),
        "repeat_second": second.item(),
        "prefix_matching": prefix.cpu().tolist(),
        "best_layer1_pm": prefix[-1].max().item(),
        "prev_token": scores.previous_token_score(pattern).cpu().tolist(),
    }


def _clipping(max_norm: float) -> Callable[[], None]:
    """Clip every optimiser's gradients to ``max_norm`` before its steps (``lib.core.train`` has no clipping); returns
    the function that removes the hook."""
    if max_norm == 0:
        return lambda: None

    def clip(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        torch.nn.utils.clip_grad_norm_(params, max_norm)

    return register_optimizer_step_pre_hook(clip).remove


def run(
    name: str | Recipe,
    log: TextIO,
    device: torch.device | str = "cpu",
    steps: int | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Train the recipe ``name`` (one of :func:`recipes`, or a :class:`Recipe`) with :func:`lib.core.train.train`,
    writing a JSON line to ``log`` at step 0 and every ``every`` steps (and at the last).

    Args:
        steps: train only the first ``steps`` steps (a dry run); ``None``: the recipe's.
        limit: train on the first ``limit`` characters of the training text (a dry run).

    Returns:
        ``{"recipe", "seconds", "tokens_per_second", "loss" (steps,), "log" {step: measure}, "checkpoints"}``.
    """
    from lib.induction.natural.slim import SlimModel

    if isinstance(name, Recipe):
        recipe, name = name, "custom"
    else:
        validate.one_of("name", name, tuple(recipes()))
        recipe = recipes()[name]
    train_ids, held_ids = corpus_ids(recipe, limit)
    if int(train_ids.max()) >= recipe.model.d_vocab:
        raise ValueError(f"the {recipe.corpus} corpus has token ids beyond the model's d_vocab {recipe.model.d_vocab}")
    probe = make_probes(held_ids, probe_pool(train_ids, recipe.model.d_vocab), recipe.model.n_ctx, device)
    model = SlimModel(recipe.model, seed=recipe.seed).to(device)
    config = recipe.train_config(steps)
    if recipe.data == "text":
        make_batch = corpus.batch_fn(train_ids.to(device), recipe.model.n_ctx, recipe.seed, recipe.repeat_share)
    else:
        make_batch = sequences.make_batch_fn(random_repeats(recipe.model))
    # the training loss since the last line, summed in place on the device: no host sync a step, and no tensor kept
    # a step (a list of the steps' detached losses, even copied, grew the process by 1-3 MB a step: 21 GB by step
    # 7,000, killed for memory)
    since = torch.zeros((), device=device)
    counts = {"steps": 0, "since": 0}  # steps trained; steps since the last line
    start = time.perf_counter()

    def loss_fn(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        loss = scores.per_token_loss(model, tokens, check_ids=False).mean()  # corpus windows: valid ids
        since.add_(loss.detach())
        counts["steps"] += 1
        counts["since"] += 1
        return loss

    def evaluate(model: nn.Module) -> dict[str, Any]:
        entry = {"step": counts["steps"], **measure(model, probe)}  # loss_fn runs once a step
        entry["train_loss"] = (since / counts["since"]).item() if counts["since"] else None
        since.zero_()
        counts["since"] = 0
        entry["seconds"] = round(time.perf_counter() - start, 1)
        log.write(json.dumps(entry) + "\n")
        log.flush()
        return entry

    remove = _clipping(recipe.clip)
    try:
        history = train(model, make_batch, loss_fn, config, evaluate=evaluate)
    finally:
        remove()
    return {
        "recipe": {**asdict(recipe), "name": name},
        "seconds": history.seconds,
        "tokens_per_second": config.steps * recipe.tokens_per_step / history.seconds,
        "loss": history.loss,
        "log": history.evals,
        "checkpoints": history.checkpoints,
    }
