"""The three trained models of chapter 8 as shipped: their configuration, how they were
trained, their loss curves, what was measured at every checkpoint, and some checkpoints.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

import torch

from lib.core import seeds, validate
from lib.core.device import check_device
from lib.core.train import TrainConfig
from lib.induction.natural.corpus import DATA, VOCAB
from lib.induction.natural.probes import BIN, EARLY, LATE, Measurement

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge


@dataclass(frozen=True)
class NaturalConfig:
    """An attention-only model for the corpus.

    Attributes:
        n_layers: 2 can form induction heads; 1 is the control (unless ``smeared``).
        n_heads, d_model, d_head: heads per layer and widths.
        seq_len: context length, BOS included.
        layer_norm: LayerNorm before each attention layer and the unembedding (``False``: a plain sum).
        smeared: smeared keys (:mod:`lib.induction.smear`) in every layer.
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


def make_model(
    config: NaturalConfig, seed: int = seeds.seed(0), device: torch.device | str | None = None
) -> TransformerBridge:
    """A fresh attention-only ``TransformerBridge`` of :data:`VOCAB` tokens (weights from ``seed``, built on the CPU
    so that every device starts from the same numbers, then moved to ``device``)."""
    from transformer_lens.model_bridge.sources import boot_native

    from lib.induction import models, smear

    cfg = models.attention_only_config(
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
        train: how it was trained (``checkpoint_steps`` left out: the shipped ones are the keys of ``checkpoints``).
        device: where it was trained; seconds: how long the loop took there.
        loss: ``(steps,)`` training loss of every step.
        log: step -> what ``scripts/train_natural.py`` measured at that checkpoint.
        checkpoints: step -> ``state_dict`` (float16 as shipped; :func:`model_at` loads one).
    """

    config: NaturalConfig
    train: TrainConfig
    device: str
    seconds: float
    loss: torch.Tensor
    log: dict[int, Measurement]
    checkpoints: dict[int, dict[str, torch.Tensor]]

    def model_at(self, step: int, device: torch.device | str | None = None) -> TransformerBridge:
        """A model holding the checkpoint of ``step`` (float32); step 0 is rebuilt from the seed if not shipped."""
        if step == 0 and 0 not in self.checkpoints:
            return make_model(self.config, seed=self.train.seed, device=device)
        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step}; shipped: {sorted(self.checkpoints)}")
        model = make_model(self.config)
        model.load_state_dict({k: v.float() for k, v in self.checkpoints[step].items()})
        model.eval()
        target = check_device(device)
        return model if target is None or target.type == "cpu" else model.to(target)


def save_run(path: Path, run: Run) -> None:
    """Write ``run`` to ``path`` (a dict of plain values and tensors: loadable with ``weights_only=True``)."""
    train = {k: v for k, v in asdict(run.train).items() if k != "checkpoint_steps"}
    torch.save(
        {
            "config": asdict(run.config),
            "train": train,
            "device": run.device,
            "seconds": float(run.seconds),
            "loss": run.loss.float().cpu(),
            "log": {int(s): {k: v for k, v in asdict(m).items() if v is not None} for s, m in run.log.items()},
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
    data = torch.load(DATA / RUNS[name], map_location="cpu", weights_only=True)
    return Run(
        config=NaturalConfig(**data["config"]),
        train=TrainConfig(**data["train"]),
        device=data["device"],
        seconds=data["seconds"],
        loss=data["loss"],
        log={int(s): Measurement(**v) for s, v in data["log"].items()},
        checkpoints={int(s): v for s, v in data["checkpoints"].items()},
    )


LogKey = Literal["held_loss", "nat_repeat_first", "nat_repeat_second", "rand_repeat_first", "rand_repeat_second", "icl"]

HeadKey = Literal["nat_repeat_pm", "rand_repeat_pm", "prev_token"]


def log_curve(run: Run, key: LogKey) -> tuple[list[int], torch.Tensor]:
    """``(steps, (K,) values)`` of one logged number over training; ``"icl"`` is the ICL score of the logged
    held-out windows (bin 15 minus bin 1 of ``loss_by_pos16``: exactly :data:`LATE` minus :data:`EARLY`)."""
    validate.one_of("key", key, get_args(LogKey))
    steps = sorted(run.log)
    if key == "icl":
        bins = [run.log[s].loss_by_pos16 for s in steps]
        values = [b[LATE.start // BIN] - b[EARLY.start // BIN] for b in bins]
    else:
        values = [getattr(run.log[s], key) for s in steps]
    return steps, torch.tensor(values, dtype=torch.float32)


def head_curve(run: Run, key: HeadKey) -> tuple[list[int], torch.Tensor]:
    """``(steps, (K, n_layers, n_heads))``: one logged head score of every head over training."""
    validate.one_of("key", key, get_args(HeadKey))
    steps = sorted(run.log)
    return steps, torch.tensor([getattr(run.log[s], key) for s in steps], dtype=torch.float32)
