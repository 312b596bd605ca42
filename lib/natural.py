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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast, get_args

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


def batch_fn(ids: torch.Tensor, seq_len: int, seed: int) -> Callable[[int, torch.Generator], torch.Tensor]:
    """A ``make_batch`` for :func:`lib.train.train`: random windows of ``ids`` (see :func:`windows`).

    The window starts come from a CPU generator seeded with ``seed`` (the device generator ``lib.train`` passes
    is not used), so a CPU and a GPU run see the same batches; ``ids`` may live on any device.
    """
    validate.int_at_least("seq_len", seq_len, 2, "BOS and one token")
    if len(ids) < seq_len - 1:
        raise ValueError(f"ids has {len(ids)} tokens, fewer than one window of seq_len - 1 = {seq_len - 1}")
    generator = torch.Generator().manual_seed(validate.seed(seed))

    def make_batch(batch_size: int, _device_generator: torch.Generator) -> torch.Tensor:
        starts = torch.randint(0, len(ids) - seq_len + 2, (batch_size,), generator=generator)
        return windows(ids, starts, seq_len)

    return make_batch


def window_loss(model: torch.nn.Module, tokens: torch.Tensor, chunk: int = 8) -> torch.Tensor:
    """:func:`lib.scores.per_token_loss` of many windows, ``chunk`` windows at a time, under ``torch.inference_mode``.

    One pass over all 619 held-out windows would hold 650 MB of logits; chunks of 8 windows (8 MB of logits, 16 MB
    of attention scores) stay below the size at which the C allocator returns memory to the system after every
    use, which made larger chunks 1.6 times slower on a laptop CPU.

    Returns:
        ``(batch, seq - 1)``.
    """
    from lib.scores import per_token_loss

    validate.positive_int("chunk", chunk)
    with torch.inference_mode():
        return torch.cat([per_token_loss(model, tokens[i : i + chunk]) for i in range(0, len(tokens), chunk)])


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
    from transformer_lens.model_bridge.sources import boot_native

    from lib import induction, smear

    cfg = induction.attention_only_config(
        n_layers=config.n_layers,
        n_heads=config.n_heads,
        d_model=config.d_model,
        d_head=config.d_head,
        n_ctx=config.seq_len,
        vocab=VOCAB,
        layer_norm=config.layer_norm,
        seed=validate.seed(seed),
    )
    model = boot_native(cfg, device="cpu")
    if config.smeared:
        smear.attach_smear(model)
    target = check_device(device)
    return model if target is None or target.type == "cpu" else model.to(target)


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


def icl_per_window(loss: torch.Tensor) -> torch.Tensor:
    """Each window's ICL score: its mean loss over :data:`LATE` minus its mean loss over :data:`EARLY`.

    Args:
        loss: ``(..., batch, 255)`` per-token loss of 256-token windows.

    Returns:
        ``(..., batch)``; negative where the window's later tokens are predicted better.
    """
    if loss.ndim < 2 or loss.shape[-1] != LATE.stop:
        raise ValueError(
            f"loss must be (..., batch, {LATE.stop}) per-token loss of 256-token windows, got {tuple(loss.shape)}"
        )
    return loss[..., LATE].mean(-1) - loss[..., EARLY].mean(-1)


def icl_score(loss: torch.Tensor) -> torch.Tensor:
    """The ICL score on natural text: :func:`icl_per_window` averaged over the windows, ``loss.shape[:-2]``."""
    return icl_per_window(loss).mean(-1)


def bootstrap_interval(
    statistic: Callable[[torch.Tensor], torch.Tensor],
    per_window: torch.Tensor,
    level: float = 0.9,
    samples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval of ``statistic`` over windows resampled with replacement.

    Args:
        statistic: maps ``(..., batch)`` per-window values to ``(...)`` with the window axis reduced (e.g. a mean,
            or a share of the ICL score removed); it is called once on ``(..., samples, batch)`` resamples.
        per_window: ``(..., batch)``, e.g. :func:`icl_per_window` of the clean model and of ablations stacked; the
            same windows are drawn for every leading entry (paired resampling).
        level: the interval's coverage, in (0, 1).

    Returns:
        ``(low, high)`` quantiles of the resampled statistic.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    validate.positive_int("samples", samples)
    batch = per_window.shape[-1]
    g = torch.Generator().manual_seed(validate.seed(seed))
    idx = torch.randint(0, batch, (samples, batch), generator=g).to(per_window.device)
    values = statistic(per_window[..., idx]).flatten().double().cpu()
    if values.numel() != samples:
        raise ValueError(f"statistic must return one value per resample ({samples}), got {values.numel()}")
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    low, high = values.quantile(q).tolist()
    return low, high


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
        model = make_model(self.config)
        model.load_state_dict({k: v.float() for k, v in self.checkpoints[step].items()})
        model.eval()
        target = check_device(device)
        return model if target is None or target.type == "cpu" else model.to(target)


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


LogKey = Literal["held_loss", "nat_repeat_first", "nat_repeat_second", "rand_repeat_first", "rand_repeat_second", "icl"]
HeadKey = Literal["nat_repeat_pm", "rand_repeat_pm", "prev_token"]


def log_curve(run: Run, key: LogKey) -> tuple[list[int], torch.Tensor]:
    """``(steps, (K,) values)`` of one logged number over training; ``"icl"`` is the ICL score of the logged
    held-out windows (bin 15 minus bin 1 of ``loss_by_pos16``: exactly :data:`LATE` minus :data:`EARLY`)."""
    steps = sorted(run.log)
    if key == "icl":
        bins = [cast(list[float], run.log[s]["loss_by_pos16"]) for s in steps]
        values = [b[LATE.start // BIN] - b[EARLY.start // BIN] for b in bins]
    else:
        validate.one_of("key", key, get_args(LogKey))
        values = [cast(float, run.log[s][key]) for s in steps]
    return steps, torch.tensor(values, dtype=torch.float32)


def head_curve(run: Run, key: HeadKey) -> tuple[list[int], torch.Tensor]:
    """``(steps, (K, n_layers, n_heads))``: one logged head score of every head over training."""
    validate.one_of("key", key, get_args(HeadKey))
    steps = sorted(run.log)
    return steps, torch.tensor([run.log[s][key] for s in steps], dtype=torch.float32)


def rise_window(steps: Sequence[int], values: torch.Tensor, low: float = 0.1, high: float = 0.9) -> tuple[int, int]:
    """Where a rising curve makes its rise: the first steps at which it has covered ``low`` and ``high`` of the way
    from its first value to its maximum.

    Args:
        steps: ``(K,)`` increasing steps. values: ``(K,)``.
    """
    if len(steps) != len(values) or len(steps) < 2:
        raise ValueError(f"need as many values as steps (at least 2), got {len(values)} values for {len(steps)} steps")
    if not 0 <= low < high <= 1:
        raise ValueError(f"need 0 <= low < high <= 1, got low={low!r}, high={high!r}")
    first, top = values[0].item(), values.max().item()
    if top <= first:
        raise ValueError("the curve never rises above its first value: no rise to locate")
    covered = (values - first) / (top - first)
    start = next(s for s, c in zip(steps, covered.tolist()) if c >= low)
    end = next(s for s, c in zip(steps, covered.tolist()) if c >= high)
    return start, end


# ---------------------------------------------------------------------------------------------
# What the training script measures at every checkpoint (and the chapter re-measures)
# ---------------------------------------------------------------------------------------------

PROBE_SEED = 1234


COMMON_TOKENS = (
    14,
    63,
    12,
    83,
    267,
    221,
    266,
    8,
    269,
    88,
    26,
    7,
    284,
    282,
    9,
    287,
    199,
    289,
    78,
    67,
    291,
    295,
    68,
    311,
    69,
    65,
    70,
    313,
    272,
    306,
    71,
    265,
    84,
    80,
    79,
    280,
    17,
    85,
    73,
    37,
    321,
    77,
    329,
    323,
    331,
    35,
    89,
    334,
    279,
    52,
    337,
    338,
    340,
    66,
    305,
    76,
    263,
    82,
    51,
    271,
    29,
    16,
    335,
    13,
    258,
    353,
    2,
    354,
    33,
    357,
    87,
    18,
    48,
    360,
    288,
    348,
    60,
    302,
    366,
    41,
    285,
    47,
    268,
    38,
    362,
    292,
    375,
    75,
    378,
    61,
    286,
    45,
    276,
    24,
    293,
    383,
    257,
    59,
    386,
    72,
    388,
    44,
    380,
    390,
    22,
    296,
    21,
    20,
    290,
    19,
    25,
    261,
    316,
    36,
    270,
    273,
    277,
    46,
    402,
    303,
    307,
    86,
    332,
    344,
    403,
    387,
    309,
    405,
    406,
    397,
    275,
    308,
    415,
    359,
    262,
    23,
    3,
    34,
    318,
    53,
    347,
    304,
    396,
    312,
    384,
    437,
    439,
    440,
    15,
    409,
    441,
    326,
    399,
    444,
    412,
    391,
    374,
    420,
    281,
    50,
    40,
    298,
    450,
    385,
    452,
    370,
    455,
    365,
    457,
    414,
    462,
    463,
    419,
    300,
    465,
    330,
    410,
    333,
    467,
    319,
    468,
    395,
    471,
    472,
    43,
    274,
    474,
    478,
    55,
    430,
    485,
    487,
    368,
    427,
    491,
    493,
    495,
    496,
    497,
    320,
    503,
    373,
    504,
    507,
    56,
    454,
    393,
    416,
    514,
    39,
    515,
    494,
    364,
    520,
    521,
    522,
    345,
    328,
    342,
    528,
    529,
    530,
    361,
    531,
    317,
    336,
    532,
    534,
    310,
    536,
    394,
    322,
    93,
    346,
    539,
    542,
    339,
    283,
    10,
    464,
    461,
    446,
    547,
    57,
    548,
    549,
    550,
    314,
    551,
    425,
    556,
    369,
    488,
    355,
    559,
    560,
)
"""The 256 most frequent tokens of the training text (BOS excluded), most frequent first: the random-repeat probe
draws from them. Pinned, not recomputed: five pairs of them are equally frequent, and the training runs (on a GPU)
ordered three of those pairs the other way round from a stable CPU sort; these are the runs' order
(``tests/test_natural.py`` checks that it is a most-frequent-first order of the training text's counts)."""


def common_tokens(n: int = 256) -> torch.Tensor:
    """``(n,) int64``: the ``n`` most frequent tokens of the training text (:data:`COMMON_TOKENS`), ``n <= 256``."""
    validate.int_at_least("n", n, 1)
    if n > len(COMMON_TOKENS):
        raise ValueError(f"n must be at most {len(COMMON_TOKENS)}, got {n}")
    return torch.tensor(COMMON_TOKENS[:n], dtype=torch.int64)


def probe_tokens(
    seq_len: int = 256, device: torch.device | str | None = None, random_repeats: bool = True
) -> dict[str, torch.Tensor]:
    """The fixed evaluation batches (seed :data:`PROBE_SEED`), each starting with BOS.

    Returns:
        ``"text"``: ``(64, seq_len)`` held-out windows; ``"nat_repeat"``: ``(32, 2 h + 1)`` a held-out passage of
        ``h = (seq_len - 1) // 2`` tokens, then the same passage again; ``"rand_repeat"``: ``(32, 2 h + 1)`` the
        same for ``h`` tokens drawn from the 256 most common ones (:func:`common_tokens`; left out when
        ``random_repeats`` is False).
    """
    held = held_out_ids()
    g = torch.Generator().manual_seed(PROBE_SEED)
    half = (seq_len - 1) // 2
    text = windows(held, torch.randint(0, len(held) - seq_len, (64,), generator=g), seq_len)
    passages = windows(held, torch.randint(0, len(held) - half, (32,), generator=g), half + 1)[:, 1:]
    bos = torch.full((32, 1), BOS, dtype=torch.int64)
    target = check_device(device)
    probes = {"text": text.to(target), "nat_repeat": torch.cat([bos, passages, passages], 1).to(target)}
    if random_repeats:
        common = common_tokens()
        randoms = common[torch.randint(0, len(common), (32, half), generator=g)]
        probes["rand_repeat"] = torch.cat([bos, randoms, randoms], 1).to(target)
    return probes


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
        for ``nat_repeat`` and ``rand_repeat`` (where ``probes`` has it): the mean loss on the first and on the
        second copy (``*_first``: loss positions ``0 .. h - 2``; ``*_second``: positions ``h .. 2 h - 1``, the
        predictions of the second copy's tokens) and :func:`repeat_prefix_matching` of every head (``*_pm``,
        ``[layer][head]``), and
        ``prev_token``: the previous-token score of every head on the held-out windows.
    """
    from lib import scores

    loss = scores.per_token_loss(model, probes["text"]).mean(0)
    out: dict[str, object] = {"held_loss": loss.mean().item(), "loss_by_pos": loss.cpu().tolist()}
    for name in ("nat_repeat", "rand_repeat"):
        if name not in probes:
            continue
        tokens = probes[name]
        half = (tokens.shape[1] - 1) // 2
        repeat_loss = scores.per_token_loss(model, tokens).mean(0)
        out[f"{name}_first"] = repeat_loss[: half - 1].mean().item()
        out[f"{name}_second"] = repeat_loss[half:].mean().item()
        out[f"{name}_pm"] = repeat_prefix_matching(scores.attention_patterns(model, tokens)).cpu().tolist()
    out["prev_token"] = scores.previous_token_score(scores.attention_patterns(model, probes["text"])).cpu().tolist()
    return out
