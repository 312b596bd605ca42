"""Every model and every chapter solution that takes tensors runs on the pretend accelerator without a device mix,
and gives the CPU's result (issue 37). Inputs are drawn on the CPU and moved, as the book does."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from lib.core.tokens import BOS
from lib.induction import dynamics, fuzzy, models, scores, smear
from lib.induction.natural import probes, slim
from lib.induction.sequences import seeded_generator
from lib.ocr import onelayer, sentences, split, symbolic
from tests.core.fake_device import draw, on_device, pretend_accelerator, real

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
Call = Callable[[dict[str, Any], torch.device], object]


def solutions() -> dict[str, dict[str, Any]]:
    """chapter stem -> what its solution cells (tag ``solution``, as scripts/make_learner.py reads them) define."""
    found = {}
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        namespace: dict[str, Any] = {
            "torch": torch,
            "math": math,
            "BOS": BOS,
            "scores": scores,
            "probes": probes,
            "sentences": sentences,
            "split": split,
            "dynamics": dynamics,
        }
        imported = set(namespace)
        for cell in json.loads(path.read_text())["cells"]:
            if "solution" in cell.get("metadata", {}).get("tags", []):
                exec("".join(cell["source"]), namespace)  # the book's own solution cells
        found[path.stem] = {name: value for name, value in namespace.items() if name not in imported}
    return found


def tiny_model(d: torch.device) -> Any:
    return models.make_model(models.InductionConfig(n_layers=2, d_model=32, n_heads=2, d_head=8), seed=0).to(d)


def pattern(d: torch.device) -> torch.Tensor:
    return draw(2, 3, 6, 6).softmax(-1).to(d)


PARAMS = {"W_O": draw(10, 4, seed=1), "W_V": draw(10, 4, seed=2), "W_KQ": draw(10, 10, seed=3)}
# chapter stem -> solution function -> how to call it on device d (the chapter's namespace given)
CALLS: dict[str, dict[str, Call]] = {
    "01_ocr_data": {
        "mean_rank": lambda ns, d: ns["mean_rank"](draw(5, 7).to(d), draw(5, high=7).to(d)),
    },
    "02_factorized_vs_merged": {
        "forward": lambda ns, d: ns["forward"](*on_device(list(PARAMS.values()), d), draw(6, high=10).to(d)),
        "candidate_loss": lambda ns, d: ns["candidate_loss"](
            draw(5, 10).to(d), draw(5, high=4).to(d), torch.arange(4).to(d)
        ),
        "accuracy": lambda ns, d: ns["accuracy"](draw(5, 10).to(d), draw(5, high=4).to(d), torch.arange(4).to(d)),
        # the chapter (cell 40) ranks each trained member on the CPU: numerical_rank(w.detach().cpu(), 1e-2)
        "numerical_rank": lambda ns, d: ns["numerical_rank"](draw(6, 4).to(d).detach().cpu(), 1e-2),
        "merged_forward": lambda ns, d: ns["merged_forward"](
            draw(10, 10).to(d), draw(10, 10, seed=1).to(d), draw(3, 6, high=10).to(d)
        ),
        "column_push": lambda ns, d: ns["column_push"](
            on_device(PARAMS, d), draw(3, 6, high=10).to(d), draw(3, high=10).to(d), 2, torch.arange(3).to(d)
        ),
    },
    "03_why_factorization_generalizes": {
        "margins": lambda ns, d: ns["margins"](draw(5, 7).to(d), draw(5, high=7).to(d)),
        # chapter 3 calls these on the CPU: nuclear_norm and balanced_factors on the max-margin solver's W (CPU
        # float64, cells 14 and 57), svt through proximal_step, whose W and problem tensors are CPU ones (cell 63)
        "nuclear_norm": lambda ns, d: ns["nuclear_norm"](draw(5, 7).double()),
        "svt": lambda ns, d: ns["svt"](draw(5, 7), 0.5),
        "balanced_factors": lambda ns, d: ns["balanced_factors"](draw(5, 7).double()),
        "proximal_step": lambda ns, d: ns["proximal_step"](draw(5, 7), draw(4, 7, seed=1), draw(4, high=5), 0.1, 0.01),
    },
    "05_induction_heads": {
        "repeat_mask": lambda ns, d: ns["repeat_mask"](draw(4, high=20).to(d), models.InductionConfig()),
        "previous_token_score": lambda ns, d: ns["previous_token_score"](pattern(d)),
        "prefix_matching_score": lambda ns, d: ns["prefix_matching_score"](pattern(d), draw(2, 6, high=3).to(d)),
        "olsson_copying_score": lambda ns, d: ns["olsson_copying_score"](tiny_model(d), draw(2, 12, high=64).to(d)),
    },
    "06_smeared_keys": {
        "smear_keys": lambda ns, d: ns["smear_keys"](draw(2, 6, 3, 4).to(d), draw(3).sigmoid().to(d)),
        "run_with_smear": lambda ns, d: ns["run_with_smear"](
            tiny_model(d), draw(2, 12, high=64).to(d), torch.zeros(2, 2).to(d)
        ),
        "sigma_trajectory": lambda ns, d: ns["sigma_trajectory"](
            {s: {"smear.alpha": draw(1, 4, seed=s).to(d)} for s in (0, 100)}, [0, 100]
        ),
        "half_change_step": lambda ns, d: ns["half_change_step"]([0, 1, 2], torch.tensor([1.0, 0.4, 0.0]).to(d)),
        "prediction_shares": lambda ns, d: ns["prediction_shares"](
            draw(2, 6, 9).to(d), draw(2, 6, high=9).to(d), (draw(2, 5, high=2) == 1).to(d)
        ),
    },
    "07_ablation": {
        "icl_score": lambda ns, d: ns["icl_score"](draw(3, 10).to(d), slice(0, 2), slice(7, 10)),
        "fraction_removed": lambda ns, d: ns["fraction_removed"](draw(4).exp().to(d), draw(4, seed=1).exp().to(d)),
        "full_ablation": lambda ns, d: ns["full_ablation"](tiny_model(d), draw(2, 12, high=64).to(d), 1, 0),
        "mean_ablation": lambda ns, d: ns["mean_ablation"](tiny_model(d), draw(2, 12, high=64).to(d), 1, 0),
        "pattern_preserving_ablation": lambda ns, d: ns["pattern_preserving_ablation"](
            tiny_model(d), draw(2, 12, high=64).to(d), 0, 1
        ),
        "qk_from_embeddings": lambda ns, d: ns["qk_from_embeddings"](
            tiny_model(d), draw(2, 12, high=64).to(d), ("keys", "queries")
        ),
    },
    "08_natural_text": {
        "icl_per_window": lambda ns, d: ns["icl_per_window"](draw(3, 255).to(d)),
        "induction_guess": lambda ns, d: ns["induction_guess"](draw(2, 20, high=5).to(d)),
        "ablate_head": lambda ns, d: ns["ablate_head"](tiny_model(d), draw(2, 12, high=64).to(d), 1, 0),
        # cell 55: on the per-window ICL of the device's losses
        "share_interval": lambda ns, d: ns["share_interval"](
            draw(30).exp().to(d), draw(30, seed=1).exp().to(d), samples=50
        ),
    },
    "09_fuzzy_induction": {
        "cross_prefix_matching_score": lambda ns, d: ns["cross_prefix_matching_score"](
            draw(3, 2, 13, 13).softmax(-1).to(d), fuzzy_tokens().to(d), fuzzy.translation(5).to(d)
        ),
    },
    "10_induction_across_sizes": {
        "onset_tokens": lambda ns, d: ns["onset_tokens"](
            [0, 20, 40, 60], torch.tensor([4.1, 3.8, 0.6, 0.1]).to(d), 32, 49
        ),
    },
}
# Solutions that take no tensor (strings, subjects, tokenizers' text) or build theirs on the CPU from a layout.
NO_TENSOR_INPUT = {
    "01_ocr_data": {"shifted_map", "split_subjects", "pair_sentences", "train_batch", "symbolic_sequences"},
    "03_why_factorization_generalizes": {"two_row_nuclear_norm"},
    "04_ocr_in_language_models": {"control_sentences", "mean_rank_by_pair", "score_candidates", "score_batched"},
    "05_induction_heads": {"previous_token_head_weights", "induction_head_weights"},
    "06_smeared_keys": {"smeared_induction_head_weights"},
}
CASES = [
    pytest.param(stem, name, kind == "mps", id=f"{stem}-{name}-{kind}")
    for stem in CALLS
    for name in CALLS[stem]
    for kind in ("cuda", "mps")
]


@pytest.fixture(scope="module")
def namespaces() -> dict[str, dict[str, Any]]:
    return solutions()


def test_every_solution_is_called_or_listed(namespaces: dict[str, dict[str, Any]]) -> None:
    """A new solution cell needs a line in CALLS (or NO_TENSOR_INPUT, when it takes no tensor)."""
    defined = {(stem, name) for stem, ns in namespaces.items() for name in ns if not name.startswith("__")}
    listed = {(s, n) for s in CALLS for n in CALLS[s]} | {(s, n) for s in NO_TENSOR_INPUT for n in NO_TENSOR_INPUT[s]}
    assert defined == listed


@pytest.mark.parametrize(("stem", "name", "mps"), CASES)
def test_solution_on_the_device(namespaces: dict[str, dict[str, Any]], stem: str, name: str, mps: bool) -> None:
    """As the chapter calls it, on a GPU (cuda) and on a Mac's (mps: no float64, SVD or eigh there)."""
    call = CALLS[stem][name]
    expected = call(namespaces[stem], torch.device("cpu"))
    with pretend_accelerator(mps=mps) as device:
        got = call(namespaces[stem], device)
    torch.testing.assert_close(real(got), expected, check_device=False)


def fuzzy_tokens() -> torch.Tensor:
    """(3, 13) sequences of chapter 9's task, two languages of 5 words, every repeat translated."""
    config = fuzzy.FuzzyConfig(language=5, seq_len=13, min_repeat=2, max_repeat=4)
    return fuzzy.fuzzy_sequences(3, seeded_generator(5), config, translated=True)[0]


def onelayer_loss(d: torch.device) -> torch.Tensor:
    task = symbolic.build_symbolic()
    model = onelayer.OneLayer(onelayer.OneLayerConfig(vocab_size=task.vocab_size, n_seeds=2)).to(d)
    tokens, answers = task.train_batch(8, torch.Generator().manual_seed(0))
    logits = model(tokens.to(d))  # (seeds, batch, vocab)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), answers.to(d).repeat(2))


def bridge_loss(make: Callable[[], torch.nn.Module], vocab: int) -> Callable[[torch.device], torch.Tensor]:
    def loss(d: torch.device) -> torch.Tensor:
        return models.training_loss(make().to(d), draw(2, 16, high=vocab).to(d))

    return loss


SMALL = models.InductionConfig(n_layers=2, d_model=32, n_heads=2, d_head=8)
MODELS: dict[str, Callable[[torch.device], torch.Tensor]] = {
    "induction.models": bridge_loss(lambda: models.make_model(SMALL, seed=0), SMALL.vocab),
    "induction.smear": bridge_loss(lambda: smear.make_model(SMALL.with_layers(1), seed=0), SMALL.vocab),
    "natural.slim": bridge_loss(lambda: slim.SlimModel(slim.SlimConfig(d_model=32, d_head=8, n_heads=4)), 100),
    "ocr.onelayer": onelayer_loss,
}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("mps", [False, True], ids=["cuda", "mps"])
def test_model_forward_and_backward(name: str, mps: bool) -> None:
    loss = MODELS[name]
    expected = loss(torch.device("cpu"))
    with pretend_accelerator(mps=mps) as device:
        got = loss(device)
        got.backward()
        assert got.device == device
    torch.testing.assert_close(real(got), expected.detach())
