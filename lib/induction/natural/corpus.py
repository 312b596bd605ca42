"""Natural text for chapter 8: a pinned corpus of Python source, its BPE tokenizer, batches and models.

The corpus is the standard library of CPython 3.11.7 (``Lib/**/*.py`` without tests; PSF license), shipped
LZMA-compressed in ``lib/data`` and pinned by :data:`CORPUS_SHA256`, so every machine trains and evaluates on
the same tokens (``scripts/build_corpus.py`` shows how it was made). Files are kept whole: every
:data:`HELD_OUT_EVERY`-th file is held out for evaluation, the rest is the training text.

The tokenizer is byte-level BPE with :data:`VOCAB` tokens trained on the training files (``tokenizers``, which
transformer_lens already needs). Byte-level: no unknown token, so the rare identifiers an induction head copies
stay visible. Token ``0`` is the BOS token ``<|bos|>``, as in chapters 5-7; each training window starts with it.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from lib.core import validate
from lib.core.tokens import BOS

if TYPE_CHECKING:
    from tokenizers import Tokenizer


DATA = Path(__file__).resolve().parents[2] / "data"

CORPUS_PATH = DATA / "pystdlib-3.11.7.txt.xz"

TOKENIZER_PATH = DATA / "pystdlib-bpe1024.json"

LICENSE_PATH = DATA / "LICENSE-PSF.txt"

CORPUS_SHA256 = "72a83f46cdabd7c7939c3c4d904a3db258da2b539f9bd017677eaf9dc444633b"
"""SHA-256 of the decompressed corpus text (UTF-8)."""

TOKENIZER_SHA256 = "6d5aa12d707cbedf6a156b969ef0e10a5dc060f8e95beba33e74098163030f91"
"""SHA-256 of the tokenizer file."""

VOCAB = 1024

BOS_TEXT = "<|bos|>"

HELD_OUT_EVERY = 20
"""Files ``HELD_OUT_EVERY - 1, 2 * HELD_OUT_EVERY - 1, ...`` (in path order) are held out."""

_FILE_LINE = re.compile(r"^# file: ", re.MULTILINE)


def sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def corpus_text() -> str:
    """The whole corpus, checked against :data:`CORPUS_SHA256`."""
    text = lzma.decompress(CORPUS_PATH.read_bytes()).decode("utf-8")
    if CORPUS_SHA256 and sha256(text) != CORPUS_SHA256:
        raise ValueError(f"{CORPUS_PATH.name} is not the pinned corpus (sha256 {sha256(text)} != {CORPUS_SHA256})")
    return text


def split_files(text: str) -> tuple[str, str]:
    """``(training text, held-out text)``: whole files, every :data:`HELD_OUT_EVERY`-th one held out."""
    starts = [m.start() for m in _FILE_LINE.finditer(text)]
    if not starts:
        raise ValueError("the text has no '# file: ' lines: it is not a corpus built by scripts/build_corpus.py")
    files = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    held = [f for i, f in enumerate(files) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]
    kept = [f for i, f in enumerate(files) if i % HELD_OUT_EVERY != HELD_OUT_EVERY - 1]
    return "".join(kept), "".join(held)


def train_tokenizer(text: str, vocab: int = VOCAB) -> Tokenizer:
    """A byte-level BPE tokenizer of ``vocab`` tokens trained on ``text``; ``<|bos|>`` is token 0."""
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(
        [text], vocab_size=vocab, min_frequency=2, special_tokens=[BOS_TEXT], show_progress=False
    )
    return tokenizer._tokenizer


@functools.cache
def tokenizer() -> Tokenizer:
    """The shipped tokenizer (:data:`TOKENIZER_PATH`), checked against :data:`TOKENIZER_SHA256`."""
    from tokenizers import Tokenizer

    text = TOKENIZER_PATH.read_text()
    if TOKENIZER_SHA256 and sha256(text) != TOKENIZER_SHA256:
        raise ValueError(f"{TOKENIZER_PATH.name} is not the pinned tokenizer (sha256 {sha256(text)})")
    return Tokenizer.from_str(text)


def encode(text: str) -> torch.Tensor:
    """``(n,) int64`` token ids of ``text`` (no BOS added)."""
    return torch.tensor(tokenizer().encode(text).ids, dtype=torch.int64)


def decode(ids: torch.Tensor | list[int]) -> list[str]:
    """Each token id as its text piece (``<|bos|>`` for the BOS token). A token that holds part of a multi-byte
    character decodes to the replacement character ``�``."""
    tok = tokenizer()
    return [tok.decode([int(i)], skip_special_tokens=False) for i in ids]


def visible(piece: str) -> str:
    """A token's text with its whitespace made visible: space ``·``, newline ``⏎``, tab ``→``."""
    return piece.replace(" ", "·").replace("\n", "⏎").replace("\t", "→")


def show(ids: torch.Tensor | list[int]) -> str:
    """Token ids as their text pieces separated by plain spaces, their own whitespace made visible (:func:`visible`)."""
    return " ".join(visible(piece) for piece in decode(ids))


@functools.cache
def training_ids() -> torch.Tensor:
    """``(n,) int64`` token ids of the training files, on the CPU (about 4.0 M tokens; encoding takes seconds)."""
    return encode(split_files(corpus_text())[0])


@functools.cache
def held_out_ids() -> torch.Tensor:
    """``(n,) int64`` token ids of the held-out files, on the CPU (about 158 k tokens)."""
    return encode(split_files(corpus_text())[1])


def windows(ids: torch.Tensor, starts: torch.Tensor, seq_len: int) -> torch.Tensor:
    """``(len(starts), seq_len) int64``: BOS, then ``seq_len - 1`` tokens of ``ids`` from each start."""
    offsets = torch.arange(seq_len - 1, device=ids.device)
    body = ids[starts.to(ids.device)[:, None] + offsets]
    bos = torch.full((len(starts), 1), BOS, dtype=ids.dtype, device=ids.device)
    return torch.cat([bos, body], dim=1)


def tiled_windows(ids: torch.Tensor, seq_len: int = 256) -> torch.Tensor:
    """``(n, seq_len) int64``: ``ids`` cut into consecutive, non-overlapping windows of ``seq_len - 1`` tokens, each
    after a BOS (:func:`windows`); the tail that does not fill a window is left out."""
    validate.int_at_least("seq_len", seq_len, 2, "BOS and one token")
    n = len(ids) // (seq_len - 1)
    if n == 0:
        raise ValueError(f"ids has {len(ids)} tokens, fewer than one window of seq_len - 1 = {seq_len - 1}")
    return windows(ids, torch.arange(n) * (seq_len - 1), seq_len)


REPEAT_SPAN = (8, 32)
"""The shortest and longest span :func:`plant_repeats` copies, in tokens."""


def plant_repeats(batch: torch.Tensor, share: float, generator: torch.Generator) -> torch.Tensor:
    """A copy of ``batch`` in which about ``share`` of the windows repeat a span of their own text.

    For every window the CPU ``generator`` draws, in this order, whether it is picked (probability ``share``), a
    span length ``L`` in :data:`REPEAT_SPAN`, a source start ``s`` in ``[1, seq - 2L]`` and a destination start
    ``d`` in ``[s + L, seq - L]``; a picked window gets ``window[d:d+L] = window[s:s+L]``. The draws do not depend on
    ``batch``'s device, so every device plants the same repeats; the distance ``d - s`` varies, so no fixed-offset
    head can predict the copy.

    Args:
        batch: ``(batch, seq) int64`` windows (BOS first), ``seq >= 2 * REPEAT_SPAN[1] + 1``.
        share: in ``[0, 1]``.

    Returns:
        ``(batch, seq) int64``.
    """
    validate.unit_interval("share", share)
    validate.token_batch(batch)
    rows, seq = batch.shape
    lo, hi = REPEAT_SPAN
    if seq < 2 * hi + 1:
        raise ValueError(f"windows of {seq} tokens are too short to repeat a span of up to {hi}: need {2 * hi + 1}")
    picked = torch.rand(rows, generator=generator) < share
    length = torch.randint(lo, hi + 1, (rows,), generator=generator)
    u = torch.rand(rows, 2, generator=generator)
    source = 1 + (u[:, 0] * (seq - 2 * length)).long()
    target = source + length + (u[:, 1] * (seq - 2 * length - source + 1)).long()
    out = batch.clone()
    for row in picked.nonzero().flatten().tolist():
        s, d, n = int(source[row]), int(target[row]), int(length[row])
        out[row, d : d + n] = batch[row, s : s + n]
    return out


def batch_fn(
    ids: torch.Tensor, seq_len: int, seed: int, repeat_share: float = 0.0
) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A ``make_batch`` for :func:`lib.core.train.train`: random windows of ``ids`` (see :func:`windows`), and in
    about ``repeat_share`` of them a span of the window repeated later (:func:`plant_repeats`; ``0``: plain text).

    The window starts and the repeats come from a CPU generator seeded with ``seed`` (the device generator
    ``lib.core.train`` passes is not used), so a CPU and a GPU run see the same batches; ``ids`` may live on any
    device.
    """
    validate.int_at_least("seq_len", seq_len, 2, "BOS and one token")
    validate.unit_interval("repeat_share", repeat_share)
    if len(ids) < seq_len - 1:
        raise ValueError(f"ids has {len(ids)} tokens, fewer than one window of seq_len - 1 = {seq_len - 1}")
    generator = torch.Generator().manual_seed(validate.seed(seed))

    def make_batch(batch_size: int, _device_generator: torch.Generator) -> torch.Tensor:
        starts = torch.randint(0, len(ids) - seq_len + 2, (batch_size,), generator=generator)
        batch = windows(ids, starts, seq_len)
        return plant_repeats(batch, repeat_share, generator) if repeat_share else batch

    return make_batch
