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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from lib import validate
from lib.device import check_device

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformer_lens.model_bridge import TransformerBridge

DATA = Path(__file__).resolve().parent / "data"
CORPUS_PATH = DATA / "pystdlib-3.11.7.txt.xz"
TOKENIZER_PATH = DATA / "pystdlib-bpe1024.json"
LICENSE_PATH = DATA / "LICENSE-PSF.txt"
CORPUS_SHA256 = "72a83f46cdabd7c7939c3c4d904a3db258da2b539f9bd017677eaf9dc444633b"
"""SHA-256 of the decompressed corpus text (UTF-8)."""
TOKENIZER_SHA256 = "6d5aa12d707cbedf6a156b969ef0e10a5dc060f8e95beba33e74098163030f91"
"""SHA-256 of the tokenizer file."""
VOCAB = 1024
BOS_TEXT = "<|bos|>"
BOS = 0
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
    """Each token id as its text piece (bytes shown as text; ``<|bos|>`` for the BOS token)."""
    tok = tokenizer()
    return [tok.decode([int(i)], skip_special_tokens=False) for i in ids]


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


def batch_fn(ids: torch.Tensor, seq_len: int, seed: int) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A ``make_batch`` for :func:`lib.train.train`: random windows of ``ids`` (see :func:`windows`).

    The window starts come from a CPU generator seeded with ``seed`` (the device generator ``lib.train`` passes
    is not used), so a CPU and a GPU run see the same batches; ``ids`` may live on any device.
    """
    validate.int_at_least("seq_len", seq_len, 2, "BOS and one token")
    if len(ids) < seq_len:
        raise ValueError(f"ids has {len(ids)} tokens, fewer than one window of seq_len - 1 = {seq_len - 1}")
    generator = torch.Generator().manual_seed(validate.seed(seed))

    def make_batch(batch_size: int, _device_generator: torch.Generator) -> torch.Tensor:
        starts = torch.randint(0, len(ids) - seq_len + 2, (batch_size,), generator=generator)
        return windows(ids, starts, seq_len)

    return make_batch


def training_loss(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss of a batch of windows (the ``loss_fn`` for :func:`lib.train.train`)."""
    from lib.scores import per_token_loss

    return per_token_loss(model, tokens).mean()


@dataclass(frozen=True)
class NaturalConfig:
    """An attention-only model for the corpus.

    Attributes:
        n_layers: 2 can form induction heads; 1 is the control (unless ``smeared``).
        n_heads, d_model, d_head: heads per layer and widths.
        seq_len: context length, BOS included.
        layer_norm: LayerNorm before each attention layer and the unembedding (``False``: a plain sum).
        smeared: smeared keys (:mod:`lib.smear`) in every layer.
    """

    n_layers: int = 2
    n_heads: int = 8
    d_model: int = 128
    d_head: int = 16
    seq_len: int = 256
    layer_norm: bool = False
    smeared: bool = False

    def __post_init__(self) -> None:
        for name in ("n_layers", "n_heads", "d_model", "d_head"):
            validate.positive_int(name, getattr(self, name))
        validate.int_at_least("seq_len", self.seq_len, 4, "BOS and three tokens")


def make_model(config: NaturalConfig, seed: int = 0, device: torch.device | str | None = None) -> TransformerBridge:
    """A fresh attention-only ``TransformerBridge`` of :data:`VOCAB` tokens (weights from ``seed``, built on the CPU
    so that every device starts from the same numbers, then moved to ``device``)."""
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge.sources import boot_native

    from lib import smear

    cfg = TransformerBridgeConfig(
        d_model=config.d_model,
        d_head=config.d_head,
        n_heads=config.n_heads,
        n_layers=config.n_layers,
        n_ctx=config.seq_len,
        d_vocab=VOCAB,
        attn_only=True,
        normalization_type="LN" if config.layer_norm else None,
        positional_embedding_type="standard",
        initializer_range=-1.0,
        seed=validate.seed(seed),
    )
    model = boot_native(cfg, device="cpu")
    if config.smeared:
        smear.attach_smear(model)
    target = check_device(device)
    return model if target is None else model.to(target)


# ---------------------------------------------------------------------------------------------
# The in-context-learning score on natural text, and the trained runs shipped with the book
# ---------------------------------------------------------------------------------------------

BIN = 16
"""Per-position losses are logged in bins of this many positions (bin ``i``: loss positions ``16 i .. 16 i + 15``)."""
EARLY = range(16, 32)
"""Loss positions of the ICL score's early term: the predictions of tokens 17-32 of a window (bin 1)."""
LATE = range(240, 255)
"""Loss positions of the late term: the predictions of tokens 241-255, the last 15 of a 256-token window (bin 15)."""


def loss_bins(loss_by_position: torch.Tensor) -> list[float]:
    """``(seq - 1,)`` mean loss per position -> its means over bins of :data:`BIN` positions (the last bin shorter)."""
    return [loss_by_position[i : i + BIN].mean().item() for i in range(0, len(loss_by_position), BIN)]


def icl_score(loss: torch.Tensor) -> torch.Tensor:
    """Mean loss over :data:`LATE` minus mean loss over :data:`EARLY` (negative: later tokens are predicted better).

    Args:
        loss: ``(..., batch, 255)`` per-token loss of 256-token windows.

    Returns:
        ``loss.shape[:-2]``.
    """
    if loss.ndim < 2 or loss.shape[-1] != LATE.stop:
        raise ValueError(
            f"loss must be (..., batch, {LATE.stop}) per-token loss of 256-token windows, got {tuple(loss.shape)}"
        )
    by_position = loss.mean(dim=-2)
    return by_position[..., LATE].mean(-1) - by_position[..., EARLY].mean(-1)


RUNS = {
    "two layers": "natural-2layer.pt",
    "one layer": "natural-1layer.pt",
    "one layer, smeared": "natural-1layer-smeared.pt",
}
"""The three trained models of chapter 8: name -> file in ``lib/data`` (written by :func:`save_run`)."""


@dataclass
class Run:
    """A trained model as shipped: how it was trained, its loss curve, its measurements and some checkpoints.

    Attributes:
        config: the model.
        train: the :class:`lib.train.TrainConfig` fields it was trained with (``checkpoint_steps`` left out).
        device: where it was trained; seconds: how long the loop took there.
        loss: ``(steps,)`` training loss of every step.
        log: step -> what ``scripts/train_natural.py`` measured at that checkpoint (:func:`summarize`).
        checkpoints: step -> ``state_dict`` (float16 as shipped; :func:`model_at` loads one).
    """

    config: NaturalConfig
    train: dict[str, object]
    device: str
    seconds: float
    loss: torch.Tensor
    log: dict[int, dict[str, object]]
    checkpoints: dict[int, dict[str, torch.Tensor]]

    def model_at(self, step: int, device: torch.device | str | None = None) -> TransformerBridge:
        """A model holding the checkpoint of ``step`` (float32); step 0 is rebuilt from the seed if not shipped."""
        if step == 0 and 0 not in self.checkpoints:
            return make_model(self.config, seed=int(self.train["seed"]), device=device)  # type: ignore[call-overload]
        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step}; shipped: {sorted(self.checkpoints)}")
        model = make_model(self.config, device="cpu")
        model.load_state_dict({k: v.float() for k, v in self.checkpoints[step].items()})
        model.eval()
        target = check_device(device)
        return model if target is None else model.to(target)


def summarize(measured: dict[str, object]) -> dict[str, object]:
    """What is logged at a checkpoint: ``measured`` with its ``loss_by_pos`` list replaced by ``loss_by_pos16``."""
    out = dict(measured)
    by_position = out.pop("loss_by_pos")
    out["loss_by_pos16"] = loss_bins(torch.tensor(by_position))
    return out


def save_run(path: Path, run: Run) -> None:
    """Write ``run`` to ``path`` (a dict of plain values and tensors: loadable with ``weights_only=True``)."""
    from dataclasses import asdict

    torch.save(
        {
            "config": asdict(run.config),
            "train": dict(run.train),
            "device": run.device,
            "seconds": float(run.seconds),
            "loss": run.loss.float().cpu(),
            "log": {int(s): v for s, v in run.log.items()},
            "checkpoints": {
                int(s): {k: v.detach().to("cpu", torch.float16) for k, v in state.items()}
                for s, state in run.checkpoints.items()
            },
        },
        path,
    )


@functools.cache
def load_run(name: str) -> Run:
    """The shipped run ``name`` (a key of :data:`RUNS`)."""
    validate.one_of("name", name, tuple(RUNS))
    data = torch.load(DATA / RUNS[name], weights_only=True)
    return Run(
        config=NaturalConfig(**data["config"]),
        train=data["train"],
        device=data["device"],
        seconds=data["seconds"],
        loss=data["loss"],
        log={int(s): v for s, v in data["log"].items()},
        checkpoints={int(s): v for s, v in data["checkpoints"].items()},
    )


# ---------------------------------------------------------------------------------------------
# What the training script measures at every checkpoint (and the chapter re-measures)
# ---------------------------------------------------------------------------------------------

PROBE_SEED = 1234


@functools.cache
def common_tokens(n: int = 256) -> torch.Tensor:
    """``(n,) int64``: the ``n`` most frequent tokens of the training text (BOS excluded), most frequent first."""
    counts = torch.bincount(training_ids(), minlength=VOCAB)
    counts[BOS] = -1
    return counts.argsort(descending=True, stable=True)[:n]


def probe_tokens(seq_len: int = 256, device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """The fixed evaluation batches (seed :data:`PROBE_SEED`), each starting with BOS.

    Returns:
        ``"text"``: ``(64, seq_len)`` held-out windows; ``"nat_repeat"``: ``(32, 2 h + 1)`` a held-out passage of
        ``h = (seq_len - 1) // 2`` tokens, then the same passage again; ``"rand_repeat"``: ``(32, 2 h + 1)`` the
        same for ``h`` tokens drawn from the 256 most common ones (:func:`common_tokens`).
    """
    held = held_out_ids()
    g = torch.Generator().manual_seed(PROBE_SEED)
    half = (seq_len - 1) // 2
    text = windows(held, torch.randint(0, len(held) - seq_len, (64,), generator=g), seq_len)
    passages = windows(held, torch.randint(0, len(held) - half, (32,), generator=g), half + 1)[:, 1:]
    common = common_tokens()
    randoms = common[torch.randint(0, len(common), (32, half), generator=g)]
    bos = torch.full((32, 1), BOS, dtype=torch.int64)
    target = check_device(device)
    return {
        "text": text.to(target),
        "nat_repeat": torch.cat([bos, passages, passages], 1).to(target),
        "rand_repeat": torch.cat([bos, randoms, randoms], 1).to(target),
    }


def repeat_prefix_matching(pattern: torch.Tensor) -> torch.Tensor:
    """Prefix matching on a repeated batch (BOS, a passage of ``h`` tokens, the passage again).

    The mean attention from each token of the second copy to the token after its first occurrence
    (query ``q`` -> key ``q - h + 1``), over the second copy and the batch.

    Args:
        pattern: ``(..., batch, heads, 2 h + 1, 2 h + 1)``.

    Returns:
        ``(..., heads)``.
    """
    seq = pattern.shape[-1]
    if seq % 2 == 0 or seq < 5:
        raise ValueError(f"a repeated batch has 2 h + 1 positions (h >= 2), got {seq}")
    half = (seq - 1) // 2
    q = torch.arange(half + 1, seq, device=pattern.device)
    return pattern[..., q, q - half + 1].mean(dim=(-1, -3))


def measure(model: TransformerBridge, probes: dict[str, torch.Tensor]) -> dict[str, object]:
    """What ``scripts/train_natural.py`` logs at a checkpoint, on :func:`probe_tokens`.

    Returns:
        ``held_loss`` (mean loss on the held-out windows), ``loss_by_pos`` (its mean at each position, a list),
        for ``nat_repeat`` and ``rand_repeat``: the mean loss on the first and on the second copy (``*_first``,
        ``*_second``) and :func:`repeat_prefix_matching` of every head (``*_pm``, ``[layer][head]``), and
        ``prev_token``: the previous-token score of every head on the held-out windows.
    """
    from lib import scores

    loss = scores.per_token_loss(model, probes["text"]).mean(0)
    out: dict[str, object] = {"held_loss": loss.mean().item(), "loss_by_pos": loss.cpu().tolist()}
    for name in ("nat_repeat", "rand_repeat"):
        tokens = probes[name]
        half = (tokens.shape[1] - 1) // 2
        repeat_loss = scores.per_token_loss(model, tokens).mean(0)
        out[f"{name}_first"] = repeat_loss[: half - 1].mean().item()
        out[f"{name}_second"] = repeat_loss[half:].mean().item()
        out[f"{name}_pm"] = repeat_prefix_matching(scores.attention_patterns(model, tokens)).cpu().tolist()
    out["prev_token"] = scores.previous_token_score(scores.attention_patterns(model, probes["text"])).cpu().tolist()
    return out
