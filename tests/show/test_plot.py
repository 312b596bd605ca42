"""Smoke tests of every figure in lib.show.plot: tiny inputs shaped like the chapters', a Figure with labelled axes
that draws and closes cleanly. A new plot function needs a case in CASES (test_every_function_has_a_case)."""

import importlib
import inspect
import math
import pkgutil
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.axes import Axes
from matplotlib.colors import same_color
from matplotlib.figure import Figure
from matplotlib.text import Text

from lib.show import plot

plt.switch_backend("Agg")

generator = torch.Generator().manual_seed(0)


def rand(*shape: int, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    """Uniform numbers in ``[low, high)``, drawn from the module's seeded generator."""
    return low + (high - low) * torch.rand(*shape, generator=generator)


def attention(seq: int) -> torch.Tensor:
    """A causal ``(seq, seq)`` attention pattern, rows summing to one."""
    scores = rand(seq, seq).masked_fill(torch.ones(seq, seq).triu(1).bool(), -math.inf)
    return scores.softmax(-1)


STEPS = [0, 10, 20, 40]  # uneven, like checkpoints that thicken around the phase change
WINDOW = (10, 20)
TOKENS = torch.tensor([0, 5, 6, 7, 5, 6, 7])  # BOS, then a period-3 repeat
SEQ_LOSS = rand(len(TOKENS) - 1, low=0.1, high=3.0)
SUBJECT_FACT = torch.arange(16) % 4  # 16 subjects, 4 facts: the split figure needs ~16 columns to lay out
IS_TRAIN = torch.arange(16) < 4  # one training subject per fact
PAIRS = ["a -> b (speaks)", "c -> d"]
OCR_BLOCK_TITLES = ["factorized: implications x subjects", "merged: implications x subjects", "factorized: facts"]
ARMS = ["1 layer", "1 layer, smeared", "2 layers", "2 layers, smeared"]
HEAD_NAMES = ["L0H0", "L0H1", "L1H0"]

# (function name, case id, positional arguments, keyword arguments), shaped like the chapters' calls
CASES: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
    # --- out-of-context reasoning (chapters 1-4)
    (
        "ocr_split",
        "pairs",
        (SUBJECT_FACT, IS_TRAIN, list("ABCD")),
        {"pair_of": SUBJECT_FACT // 2, "pair_names": PAIRS, "title": "tiny split"},
    ),
    ("ocr_split", "one pair", (SUBJECT_FACT % 2, IS_TRAIN.tolist(), ["b0 → c0", "b1 → c1"]), {}),
    (
        "ocr_token_layout",
        "with kind grid",
        (["n3", "Zai", "speaks", "EOS"], ["noise", "subject", "relation", "EOS"], "French"),
        {"kind_grid": torch.tensor([[0, 1, 2, 3], [1, 0, 2, 3], [0, 1, 2, 3]])},
    ),
    ("ocr_token_layout", "alone", (["Zai", "speaks", "EOS"], ["subject", "relation", "EOS"], "French"), {}),
    (
        "ocr_loss_curves",
        "two arms",
        (
            STEPS,
            {arm: {"train": rand(2, 4, low=0.01), "test": rand(2, 4, low=1.0)} for arm in ("factorized", "merged")},
        ),
        {"chance": math.log(20)},
    ),
    (
        "ocr_ov_blocks",
        "grid with an empty cell",
        ({title: rand(4, 8, low=-1) for title in OCR_BLOCK_TITLES}, [0, 2, 4, 6]),
        {"ncols": 2, "ylabel": "answer value", "title": "blocks"},
    ),
    (
        "ocr_rank_sweep",
        "three ranks",
        ((3, 4, 8), rand(3, 2, low=0.5, high=3.0)),
        {"chance": math.log(20), "train_losses": rand(3, 2, low=0.01, high=0.1)},
    ),
    (
        "ocr_pair_losses",
        "two pairs",
        (PAIRS, {"factorized": rand(3, 2, low=0.5), "merged": rand(3, 2, low=1.0, high=2.0)}),
        {"floors": [math.log(4)] * 2},
    ),
    (
        "ocr_spectra",
        "trained and solutions",
        (
            {
                "factorized (trained)": torch.tensor([4.0, 2.0, 0.1, 0.01]),
                "merged (trained)": torch.tensor([3.0, 2.5, 2.0, 1.0]),
                "min nuclear norm": np.array([1.0, 0.5, 1e-4, 1e-5]),
            },
        ),
        {"top": 3},
    ),
    (
        "ocr_training_draw",
        "a draw without leaks",
        (rand(16, low=10, high=40), torch.where(IS_TRAIN, 30.0, 0.0), IS_TRAIN),
        {},
    ),
    (
        "ocr_directions",
        "two arms, three starts",
        (
            {
                "factorized": torch.tensor([4.0, 2.0, 0.1, 0.01]),
                "factorized, start x100": torch.tensor([4.0, 3.0, 0.5, 0.02]),
                "merged": torch.tensor([3.0, 2.5, 2.0, 1.0]),
            },
        ),
        {"top": 3},
    ),
    (
        "ocr_one_step",
        "four cases",
        (
            {
                "factorized, gradient": rand(3, low=0.9),
                "factorized, Adam": rand(3, low=0.9),
                "merged, gradient": rand(3, high=0.1),
                "merged, Adam": torch.zeros(3),
            },
        ),
        {"chance": 0.05},
    ),
    (
        "ocr_mean_rank",
        "with reference",
        (
            {"before": {p: [3.0, 3.5] for p in PAIRS}, "after": {p: [0.5, 0.1] for p in PAIRS}},
            {p: 3.5 for p in PAIRS},
        ),
        {"reference": {"model": [0.1, 0.2]}, "reference_title": "as reported", "title": "tiny"},
    ),
    # --- induction heads (chapter 5)
    (
        "phase_change_curves",
        "with control",
        (STEPS, rand(4, low=0.1, high=4.0), rand(4, low=3.0, high=4.0)),
        {"window": WINDOW, "control_repeated": rand(4, low=2.0, high=4.0), "vocab": 64},
    ),
    (
        "icl_score_curve",
        "with control",
        (STEPS, rand(4, low=-4.0, high=0.0)),
        {"window": WINDOW, "control_icl": rand(4, low=-1.0, high=0.0), "early": 2, "late": 48},
    ),
    ("loss_by_position_image", "uneven steps", (STEPS, rand(4, 6, high=4.0)), {"window": WINDOW}),
    (
        "loss_pca_trajectory",
        "with control",
        (rand(4, 2, low=-1), STEPS),
        {"window": WINDOW, "explained": torch.tensor([0.6, 0.3]), "control_coords": rand(4, 2, low=-1)},
    ),
    ("loss_pca_trajectory", "alone", (rand(4, 2, low=-1), STEPS), {}),
    (
        "head_scores_over_training",
        "signed and unsigned",
        (STEPS, {"prefix matching": rand(4, 2, 2), "copying": rand(4, 2, 2, low=-1)}),
        {"window": WINDOW},
    ),
    (
        "induction_head_classifier",
        "two models",
        (
            {
                "2 layers (trained)": {"prefix matching": rand(2, 2), "copying": rand(2, 2, low=-1)},
                "hand-built": {"prefix matching": rand(2, 2), "copying": rand(2, 2, low=-1)},
            },
            0.75,
            0.5,
        ),
        {},
    ),
    ("attention_pattern", "with tokens", (attention(len(TOKENS)), TOKENS), {"title": "L1H0"}),
    ("attention_pattern", "long sequence", (attention(20),), {}),
    (
        "attention_before_during_after",
        "three steps",
        ([attention(len(TOKENS)) for _ in range(3)], ["step 0", "step 10", "step 20"], TOKENS),
        {"head_name": "L1H0"},
    ),
    ("loss_along_sequence", "with period", (SEQ_LOSS,), {"period": 3, "vocab": 8, "title": "period 3"}),
    (
        "loss_by_position_curves",
        "three models",
        ({"a": torch.linspace(3, 2, 255), "b": torch.linspace(3.2, 2.5, 255), "c": torch.full((255,), 2.8)},),
        {"early": range(16, 32), "late": range(240, 255), "title": "held-out text"},
    ),
    (
        "circuit_matrices",
        "QK and OV",
        ({"QK": rand(4, 4, low=-1), "OV": rand(4, 3, low=-1)},),
        {
            "title": "a head",
            "xlabels": {"QK": "key position", "OV": "previous slot"},
            "ylabels": {"QK": "query position", "OV": "token"},
        },
    ),
    # --- smeared keys (chapter 6)
    (
        "arm_loss_curves",
        "four arms",
        (STEPS, {arm: rand(2, 4, low=0.1, high=4.0) for arm in ARMS}),
        {"threshold": 1.0, "phase_steps": {"1 layer": [None, None], "2 layers": [10, 20]}, "vocab": 64},
    ),
    (
        "smear_sigma_over_training",
        "two layers",
        (STEPS, rand(4, 2, 2)),
        {"highlight": [(1, 0)], "mark": 10, "title": "two layers"},
    ),
    (
        "arm_icl_by_kind",
        "two kinds, two arms",
        (
            STEPS,
            {
                kind: {"1 layer": rand(3, 4, low=-1.0, high=0.1), "1 layer, smeared": rand(3, 4, low=-3.5)}
                for kind in ("repeated", "non-repeated")
            },
        ),
        {},
    ),
    (
        "smear_off_losses",
        "three seeds",
        ([0.01, 0.02, 0.015], [5.2, 4.8, 6.0]),
        {"seeds": [0, 1, 2], "chance": 4.14},
    ),
    (
        "smear_before_loss",
        "three seeds, one or two induction heads",
        (
            STEPS,
            {"seed 0": rand(4, 2, low=0.2, high=0.5), "seed 1": rand(4, 1), "seed 2": rand(4, 2)},
            {f"seed {s}": rand(4, low=0.1, high=4.0) for s in range(3)},
        ),
        {"mark": {f"seed {s}": STEPS[2] for s in range(3)}},
    ),
    # --- ablation (chapter 7)
    (
        "ablation_effects",
        "two panels",
        (
            HEAD_NAMES,
            {
                "share of ICL score removed": {"full": rand(3), "pattern-preserving": rand(3)},
                "loss change, repeated tokens (nats)": {"full": rand(3, low=-1), "pattern-preserving": rand(3, low=-1)},
            },
        ),
        {"title": "removing heads"},
    ),
    (
        "ablation_effects",
        "chapter 7's ten ablations, three panels",
        (
            [*(f"L{layer}H{head}" for layer in range(2) for head in range(4)), "all of layer 1", "all of layer 0"],
            {
                "share of ICL score removed": {"full": rand(10), "pattern-preserving": rand(10, low=-0.1)},
                "loss change, repeated tokens (nats)": {"full": rand(10, high=3), "pattern-preserving": rand(10)},
                "loss change, first-seen tokens (nats)": {"full": rand(10), "pattern-preserving": rand(10, low=-1)},
            },
        ),
        {"title": "Removing heads from the trained two-layer model"},
    ),
    (
        "ablation_over_training",
        "two kinds",
        (STEPS, {"full": rand(4, 3, low=-1), "pattern-preserving": rand(4, 3, low=-1)}, HEAD_NAMES),
        {"window": WINDOW},
    ),
    (
        "icl_with_heads_removed",
        "styled",
        (STEPS, rand(4, low=-4), {"induction heads removed": rand(4, low=-1), "layer 0 removed": rand(4, low=-1)}),
        {"window": WINDOW, "styles": {"layer 0 removed": {"color": "tab:red", "ls": "--"}}},
    ),
    (
        "pair_against_other_pairs",
        "chapter 7's three replacements, two kinds",
        (
            {r: {"repeated": 0.6, "non-repeated": torch.tensor(0.04)} for r in ("zero", "mean", "resample")},
            {
                r: {"repeated": rand(15, high=0.1), "non-repeated": rand(15, high=0.3)}
                for r in ("zero", "mean", "resample")
            },
        ),
        {"pair_label": "L1H1 and L1H7", "title": "the induction-like pair"},
    ),
    (
        "path_cut_grid",
        "chapter 7's eight by eight heads",
        (rand(8, 8, low=-0.01, high=0.17), [f"L0H{h}" for h in range(8)], [f"L1H{h}" for h in range(8)]),
        {},
    ),
    (
        "ablated_loss_along_sequence",
        "one head",
        (SEQ_LOSS, SEQ_LOSS + rand(len(SEQ_LOSS), low=-0.5, high=1.0)),
        {"period": 3, "title": "full ablation of L1H0"},
    ),
    (
        "ablated_loss_grid",
        "grid with an empty cell",
        ([(SEQ_LOSS, SEQ_LOSS + rand(len(SEQ_LOSS), low=-0.5), f"ablation {i}") for i in range(3)],),
        {"period": 3},
    ),
    (
        "zero_against_mean",
        "two kinds, heads and groups",
        (
            {kind: rand(5, low=-0.1) for kind in ("full", "pattern-preserving")},
            {kind: rand(5, low=-0.1, high=1.1) for kind in ("full", "pattern-preserving")},
            ["L0H0", "L0H1", "L1H0", "all of layer 1", "all of layer 0"],
        ),
        {},
    ),
    # --- out-of-context reasoning, chapter 3's margin grid
    (
        "ocr_held_out_by_arm",
        "three arms",
        (
            {"merged": rand(3, high=0.1), "merged, prox": rand(3, low=0.9), "fact., start 1": rand(3, high=0.1)},
            {"merged": rand(3, low=3.0, high=3.1), "merged, prox": rand(3, low=2.0), "fact., start 1": rand(3, low=9)},
        ),
        {"chance_accuracy": 0.05, "chance_loss": math.log(20)},
    ),
    (
        "ocr_margin_grid",
        "two by two",
        (
            [1, 1, 2, 2],
            torch.tensor([1, 3, 1, 3]),
            [1.0, 0.577, 1.0, 0.816],
            [0.5, 0.25, 0.667, 0.4],
            [1, 0.577, 1, 0.816],
        ),
        {"title": "grid"},
    ),
    # --- the phase change's signatures on one time axis (chapter 5)
    (
        "phase_change_signatures",
        "with the training loss",
        (STEPS, {"repeated-token loss": [4.0, 3.5, 1.0, 0.1], "prefix matching": [0.1, 0.2, 0.7, 0.9]}),
        {
            "window": WINDOW,
            "marks": {"repeated-token loss": 20, "prefix matching": 20},
            "train_loss": rand(40, low=1.0, high=4.0),
            "train_smooth": [4.0, 3.6, 2.0, 1.5],
        },
    ),
    ("phase_change_signatures", "signatures only", (STEPS, {"flat": [1.0, 1.0, 1.0, 1.0]}), {}),
    (
        "phase_change_signatures",
        "scaled to the peak",
        (STEPS, {"rises, then falls back": [0.0, 0.8, 1.0, 0.7]}),
        {"window": WINDOW, "scale": "peak"},
    ),
    # --- each layer-0 head's positional QK (chapter 5)
    (
        "positional_qk_heads",
        "four heads, causal mask",
        (rand(4, 6, 6, low=-1).masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf")), rand(4)),
        {},
    ),
    ("positional_qk_heads", "three heads: one panel hidden", (rand(3, 5, 5), rand(3)), {"layer": 1}),
    (
        "ablation_by_checkpoint",
        "two ablations",
        (STEPS, [0.0, 0.2, 0.6, 0.5], {"whole head": [1.0, 0.9, 0.8, 0.8], "edit": [0.4, 0.7, 0.9, 0.8]}),
        {"losses": {"intact": [3.8, 3.5, 3.2, 2.9], "whole head": [4.0, 3.9, 3.8, 3.3]}, "head": "L0H6"},
    ),
    (
        "estimates_with_intervals",
        "chapter 8's ablations: two models, long row labels",
        (
            {
                "smeared one-layer model": {
                    "induction head L0H6": (0.95, 0.8, 1.1),
                    **{f"another head, L0H{h}": (-0.05, -0.15, 0.03) for h in range(7)},
                },
                "two-layer model": {
                    "L1H3 and L1H5 (most induction-like)": (0.4, 0.2, 0.6),
                    "previous-token head L0H2": (0.3, 0.16, 0.5),
                    "the other 6 layer-1 heads": (0.5, 0.3, 0.7),
                },
            },
        ),
        {
            "xlabel": "share of the ICL score removed",
            "references": [(0.0, "none of it"), (1.0, "all of it")],
            "title": "Removing heads at the end of training",
        },
    ),
    ("estimates_with_intervals", "one group, one row", ({"keys cut": {"share": (0.9, 0.4, 1.3)}},), {"xlabel": "x"}),
    (
        "scores_by_checkpoint",
        "chapter 8's criterion: two panels, references, long labels",
        (
            STEPS,
            {
                "L0H6's scores": {
                    "top key on prefix-matching keys (text)": [0.05, 0.6, 0.7, 0.7],
                    "copying": [0.3, 0.8, 0.9, 0.9],
                    "prefix matching, Olsson et al.'s probe": [0.02, 0.3, 0.4, 0.35],
                },
                "loss on the probe": {"first copy": [7.5, 7.4, 7.6, 7.7], "second copy": [7.6, 7.2, 7.1, 7.2]},
            },
        ),
        {
            "ylabels": ["score", "loss (nats)"],
            "references": {
                "L0H6's scores": [(0.5, "the criterion's 0.5"), (0.75, "chapter 5's 0.75")],
                "loss on the probe": [(6.93, "a uniform guess")],
            },
            "even": True,
            "title": "L0H6 at the shipped checkpoints",
        },
    ),
    (
        "scores_by_checkpoint",
        "one panel with intervals",
        (STEPS, {"ICL score removed": {"whole head": [0.1, 0.3, 0.4, 0.4], "edit": [0.05, 0.2, 0.3, 0.3]}}),
        {
            "ylabels": ["nats"],
            "intervals": {"ICL score removed": {"whole head": [[0.0, 0.2, 0.3, 0.3], [0.2, 0.4, 0.5, 0.5]]}},
            "styles": {"edit": ("tab:red", "--")},
            "references": {"ICL score removed": [(0.0, "nothing removed")]},
        },
    ),
    (
        "bars_by_group",
        "chapter 8's loss fall: three stretches, two models",
        (
            {
                "500 steps before": {"smeared": 0.2, "control": 0.19},
                "the window": {"smeared": 0.3, "control": 0.12},
                "500 steps after": {"smeared": 0.1, "control": 0.08},
            },
        ),
        {"ylabel": "fall of the training loss (nats)", "title": "How far the loss falls"},
    ),
    (
        "bars_by_group",
        "eight heads with a reference",
        ({f"H{h}": {"smeared": 0.05, "control": 0.03} for h in range(8)},),
        {"ylabel": "share", "xlabel": "head", "references": [(0.5, "half")]},
    ),
    (
        "curves_against",
        "chapter 8's three runs of different lengths",
        (
            {
                "two layers": (np.linspace(0.5, 68, 70), rand(70, low=0.0, high=0.4)),
                "one layer": (np.linspace(0.5, 35, 36), rand(36, low=0.0, high=0.2)),
                "one layer, smeared": (np.linspace(0.5, 38, 40), rand(40, low=0.0, high=0.2)),
            },
        ),
        {
            "xlabel": "passes over the training files",
            "ylabel": "held-out minus training loss (nats)",
            "references": [(0.15, "0.15 nats")],
        },
    ),
    (
        "arm_loss_curves",
        "arms of different lengths",
        ({"1 layer": STEPS, "2 layers": STEPS[:3]}, {"1 layer": rand(2, 4, high=4.0), "2 layers": rand(2, 3)}),
        {"threshold": 1.0, "phase_steps": {"2 layers": [10, 20]}, "vocab": 63},
    ),
    # --- the chapters' largest layouts (issue 18: readable in the ~690 px page column)
    (
        "ocr_ov_blocks",
        "chapter 2's snapshot: 2 x 4 asked, folded to 4 x 2",
        ({f"{arm}, step {s}": rand(20, 80, low=-1) for arm in ("factorized", "merged") for s in STEPS},),
        {"train_columns": list(range(0, 80, 4)), "ncols": 4, "title": "during training (top: factorized)"},
    ),
    (
        "attention_before_during_after",
        "chapter 5's five checkpoints",
        ([attention(16) for _ in range(5)], [f"step {s}" for s in range(5)], torch.arange(16) % 7),
        {"head_name": "L1H2"},
    ),
    (
        "head_scores_over_training",
        "chapter 5's three scores, 2 x 4 heads, 40 checkpoints",
        (list(range(0, 400, 10)), {n: rand(40, 2, 4) for n in ("prefix matching", "copying", "previous token")}),
        {"window": (150, 200)},
    ),
    (
        "ocr_token_layout",
        "chapter 1's 16 positions",
        ([f"tok{t}" for t in range(15)] + ["EOS"], ["noise"] * 14 + ["relation", "EOS"], "French"),
        {"kind_grid": torch.randint(0, 4, (40, 16), generator=generator)},
    ),
    (
        "induction_head_classifier",
        "chapter 6's four models, heads close together",
        (
            {
                f"model {m}": {"prefix matching": 0.9 + rand(1, 4) * 0.05, "copying": 0.8 + rand(1, 4) * 0.05}
                for m in range(4)
            },
            0.75,
            0.5,
        ),
        {},
    ),
    (
        "ocr_ov_blocks",
        "chapter 2's 2 x 2 blocks, rows of different scales",
        (
            {
                f"{arm}: {block} x subjects": rand(20, 80, low=-1) * scale
                for block, scale in (("implications", 10.0), ("facts", 0.5))
                for arm in ("factorized", "merged")
            },
            list(range(0, 80, 4)),
        ),
        {"ncols": 2, "ylabel": "answer value"},
    ),
    (
        "head_scores_over_training",
        "chapter 8's two scores, 2 x 8 heads, three highlighted, no window",
        (
            list(range(0, 30001, 250)),
            {n: rand(121, 2, 8) for n in ("previous token", "prefix matching, repeated passage")},
        ),
        {"highlight": [(0, 3), (1, 2), (1, 5)]},
    ),
    # --- diagrams (chapters 2, 5 and 7)
    ("output_value_map_diagram", "r = d", (128, 128), {}),
    ("output_value_map_diagram", "low rank", (), {"d": 128, "r": 4}),
    ("induction_circuit_diagram", "default tokens", (), {}),
    ("induction_circuit_diagram", "named tokens", ("cat", "sat"), {}),
    ("ablation_diagram", "named heads", ("L0H3", "L1H1"), {}),
    # --- the Performance page (bench/run_all.py)
    ("chapter_times", "one over budget", ({"00_start_here": 5.7, "06_smeared_keys": 95.0},), {"budget": 90.0}),
    ("time_to_phase_change", "book vs plain", ({"steps": 350, "seconds": 6.7}, {"steps": 1525, "seconds": 45.8}), {}),
    # --- chapter 4: prior knowledge (appended)
    (
        "ocr_rank_curves",
        "two panels",
        (
            STEPS,
            {
                "rule's own answer": {"pre-trained": rand(3, 4, high=9.5), "from scratch": rand(3, 4, high=9.5)},
                "the other rule's answer": {"pre-trained": rand(3, 4, high=9.5)},
            },
            9.5,
        ),
        {"title": "tiny"},
    ),
    (
        "ocr_interval_curves",
        "two panels with chance",
        (
            STEPS,
            {
                "top-1": {"pre-trained": rand(4, 3), "from scratch": rand(4, 3)},
                "retention": {"pre-trained": rand(4, 3, high=9.5)},
            },
        ),
        {"ylabels": ["share", "mean rank"], "references": [0.05, None]},
    ),
    (
        "ocr_interval_curves",
        "learning rates on a log axis",
        ([1e-3, 2e-3, 5e-3, 1e-2], {"top-1": {"pre-trained": rand(4, 3), "from scratch": rand(4, 3)}}),
        {"ylabels": ["share"], "references": [0.05], "xlabel": "learning rate", "xlog": True},
    ),
    # --- the chapters' own long titles and labels: each must still fit the page column as saved
    (
        "ocr_ov_blocks",
        "chapter 3's two solutions, long panel titles",
        ({f"min {norm} norm: implications x subjects": rand(20, 40, low=-1) for norm in ("nuclear", "Frobenius")},),
        {"train_columns": list(range(0, 40, 2)), "title": "The two max-margin solutions"},
    ),
    (
        "ocr_rank_curves",
        "chapter 4's four arms, long labels",
        (
            STEPS,
            {
                "answer of the fine-tuned rule": {
                    f"{init}, {rule} rule": rand(3, 4, high=9.5)
                    for init in ("pre-trained", "from scratch")
                    for rule in ("causal", "counterfactual")
                },
                "counterfactual runs: the true answer": {
                    f"{init}, counterfactual rule": rand(3, 4, high=9.5) for init in ("pre-trained", "from scratch")
                },
            },
            9.5,
        ),
        {"title": "Held-out new people, 3 seeds"},
    ),
    (
        "ablated_loss_grid",
        "chapter 7's four panels, long titles",
        (
            [
                (SEQ_LOSS, SEQ_LOSS + rand(len(SEQ_LOSS), low=-0.5), f"{kind} ablation of {name}, step {step}")
                for kind, name, step in [
                    ("pattern-preserving", "L1H2", 320),
                    ("pattern-preserving", "L1H2", 600),
                    ("full", "L0H3", 600),
                    ("pattern-preserving", "all of layer 1", 600),
                ]
            ],
        ),
        {"period": 3},
    ),
    (
        "phase_change_signatures",
        "chapter 8's four signatures, long labels",
        (
            STEPS,
            {
                "prefix matching of L0H6": [0.0, 0.1, 0.8, 1.0],
                "ICL improvement (the window's)": [0.1, 0.3, 0.9, 1.0],
                "loss benefit, repeated passage": [0.0, 0.2, 0.7, 1.0],
                "training loss below the control": [0.0, -0.2, 0.6, 1.0],
            },
        ),
        {
            "window": WINDOW,
            "train_loss": rand(40, low=2.5, high=7.0),
            "train_smooth": [7.0, 4.0, 3.0, 2.6],
            "smooth_label": "mean of the last 100 steps",
            "scale": "peak",
            "xmax": 30,
        },
    ),
]


def data_axes(fig: Figure) -> list[Axes]:
    """The visible panels of ``fig`` that show data (not colour bars, not hidden or empty cells)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.has_data() and ax.get_label() != "<colorbar>"]


@pytest.mark.filterwarnings("error")  # e.g. "Tight layout not applied": a figure that cannot lay out its panels
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [pytest.param(name, args, kwargs, id=f"{name}-{case}") for name, case, args, kwargs in CASES],
)
def test_figure(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    open_before = plt.get_fignums()
    fig = getattr(plot, name)(*args, **kwargs)
    assert isinstance(fig, Figure)
    assert len(plt.get_fignums()) == len(open_before) + 1, "a figure function opens exactly one figure"
    fig.canvas.draw()  # legends, layouts and colour bars fail at draw time, not at call time
    panels = data_axes(fig)
    assert panels, f"{name}: no axes with data"
    for ax in panels:
        assert ax.get_title() or ax.get_xlabel() or ax.get_ylabel(), f"{name}: a panel without title or axis labels"
    plotted = [ax for ax in panels if ax.axison]
    assert not plotted or any(ax.get_xlabel() or ax.get_ylabel() for ax in plotted), f"{name}: no axis is labelled"
    plt.close(fig)
    assert plt.get_fignums() == open_before


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("attention_pattern", (attention(len(TOKENS)), TOKENS)),
        ("ablated_loss_along_sequence", (SEQ_LOSS, SEQ_LOSS + 0.5)),
    ],
)
def test_draws_into_a_given_panel(name: str, args: tuple[Any, ...]) -> None:
    fig, ax = plt.subplots()
    assert getattr(plot, name)(*args, title="given panel", ax=ax) is fig
    assert len(fig.axes) == 1 and ax.has_data() and ax.get_title() == "given panel"
    plt.close(fig)


# The page column is about 690 px wide; a wider figure is shown scaled down to it. Text must stay at least 10 pt
# (13.3 CSS px) tall on the page, beside 16-px body text, and at most three panels may sit side by side.
COLUMN_PX = 690
MIN_TEXT_PX = 13.3  # 10 pt in CSS pixels


def displayed_size(fig: Figure) -> tuple[float, float, str]:
    """(width in px of the saved PNG, the smallest text's height in px as shown in the page column, that text).

    The book saves figures as the inline backend does: at the figure's dpi, cropped to the drawn content
    (``bbox_inches="tight"``, 0.1 inch padding)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width_px = (fig.get_tightbbox(renderer).width + 0.2) * fig.dpi
    texts = [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_window_extent(renderer).width > 0
    ]
    smallest = min(texts, key=lambda t: t.get_fontsize())
    scale = min(1.0, COLUMN_PX / width_px)
    return width_px, smallest.get_fontsize() * fig.dpi / 72 * scale, smallest.get_text()


def panels_per_row(fig: Figure) -> int:
    """The most panels (data axes, colour bars excluded) whose vertical extents overlap, i.e. side by side."""
    boxes = [ax.get_position() for ax in data_axes(fig)]
    return max(sum(1 for o in boxes if o.y0 < b.y1 and b.y0 < o.y1) for b in boxes)


def test_classifier_names_each_models_induction_heads_below_the_panel() -> None:
    """No labels beside the points (they piled up where heads crowd into the region): the legend, below the panel,
    names each model's induction heads, those past both thresholds."""
    models = {
        "trained": {"prefix matching": [[0.1, 0.2], [0.9, 0.8]], "copying": [[0.4, 0.9], [0.95, 0.3]]},
        "two heads": {"prefix matching": [[0.9, 0.76]], "copying": [[0.6, 0.99]]},
        "control": {"prefix matching": [[0.74, 0.1]], "copying": [[0.9, 0.9]]},
    }
    fig = plot.induction_head_classifier(models, 0.75, 0.5)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    (ax,) = data_axes(fig)
    assert not ax.texts and ax.get_legend() is None
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "induction head region",
        "trained: induction head L1H0",
        "two heads: induction heads L0H0, L0H1",
        "control: no induction head",
    ]
    assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer)), "the legend covers data"
    plt.close(fig)


def case(name: str, case_id: str) -> Figure:
    """The figure of one case of :data:`CASES`."""
    _, _, args, kwargs = next(c for c in CASES if c[:2] == (name, case_id))
    return getattr(plot, name)(*args, **kwargs)


def colour_limits(ax: Axes) -> tuple[float, float]:
    """``(vmin, vmax)`` of the one image of ``ax``."""
    (image,) = ax.get_images()
    return image.get_clim()


def test_ov_blocks_one_colour_scale_a_row() -> None:
    """The panels of a row share one colour scale, centred at zero, ending at the row's largest |value|; one colour
    bar a row; a row of panels folded onto several lines keeps its one scale."""
    fig = case("ocr_ov_blocks", "chapter 2's 2 x 2 blocks, rows of different scales")
    panels = data_axes(fig)
    _, _, args, _ = next(c for c in CASES if c[1] == "chapter 2's 2 x 2 blocks, rows of different scales")
    largest = [float(v.abs().max()) for v in args[0].values()]
    for row in range(2):
        bound = max(largest[2 * row : 2 * row + 2])
        for ax in panels[2 * row : 2 * row + 2]:
            assert colour_limits(ax) == pytest.approx((-bound, bound)), f"row {row}: not the row's one scale"
    assert colour_limits(panels[0]) != pytest.approx(colour_limits(panels[2])), "each row has its own scale"
    colour_bars = [inset for ax in panels for inset in ax.child_axes]  # each beside the last panel of its row
    assert len(colour_bars) == 2, "one colour bar a row"
    for bar, row_start in zip(colour_bars, (0, 2)):
        assert bar.get_ylim() == pytest.approx(colour_limits(panels[row_start])), "the bar shows its row's scale"
    plt.close(fig)

    fig = case("ocr_ov_blocks", "chapter 2's snapshot: 2 x 4 asked, folded to 4 x 2")
    limits = [colour_limits(ax) for ax in data_axes(fig)]
    assert len(set(limits[:4])) == 1 and len(set(limits[4:])) == 1, "a folded row keeps one scale"
    plt.close(fig)


def test_ov_blocks_fixed_bound_and_the_widget_keeps_one_scale_per_model(monkeypatch) -> None:
    """``bound`` fixes every row's scale; chapter 2's kernel widget passes each model's largest |value| over all its
    checkpoints, so its colours mean the same at every step of the slider."""
    from lib.show import widgets

    fig = plot.ocr_ov_blocks({"a": rand(3, 4, low=-1), "b": rand(3, 4, low=-1)}, [0], bound=7.0)
    assert all(colour_limits(ax) == pytest.approx((-7.0, 7.0)) for ax in data_axes(fig))
    plt.close(fig)
    drawn = []
    monkeypatch.setattr(widgets.plot, "ocr_ov_blocks", lambda blocks, columns, **kw: drawn.append(kw) or plt.figure())
    blocks = {"factorized": {0: torch.full((2, 3), 0.5), 10: torch.full((2, 3), -4.0)}, "merged": {0: torch.ones(2, 3)}}
    box = widgets.ocr_checkpoint_explorer(blocks, [0])
    arm, step = box.children[0].children
    step.value = 0
    arm.value = "merged"
    assert [kw["bound"] for kw in drawn] == [4.0, 4.0, 1.0], "one scale per model, whatever the step"


def test_head_scores_highlight_heads_and_shade_the_window() -> None:
    """The highlighted heads are drawn thick, in colour, and named in the legend; the others thin and grey; the
    phase-change window is shaded in every panel; the step ticks are round numbers."""
    steps, window, highlight = list(range(0, 6101, 100)), (2000, 3500), [(1, 2), (0, 1)]
    scores = {"prefix matching": rand(62, 2, 4), "copying": rand(62, 2, 4, low=-1)}
    fig = plot.head_scores_over_training(steps, scores, window=window, highlight=highlight)
    fig.canvas.draw()
    for ax in data_axes(fig):
        thick = [line for line in ax.get_lines() if line.get_linewidth() > 1.5]
        thin = [line for line in ax.get_lines() if line.get_linewidth() < 1.5 and len(line.get_xdata()) == 62]
        assert [line.get_label() for line in thick] == ["L1H2", "L0H1"]
        assert len({line.get_color() for line in thick}) == 2 and len(thin) == 6
        assert all(line.get_color() == thin[0].get_color() != thick[0].get_color() for line in thin)
        (shade,) = ax.patches
        assert shade.get_x() == window[0] and shade.get_x() + shade.get_width() == window[1]
        ticks = [t for t in ax.get_xticks() if steps[0] <= t <= steps[-1]]
        assert all(t % 1000 == 0 for t in ticks), f"ticks {ticks} are not round steps"
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["phase change", "other heads", "L1H2", "L0H1"]
    plt.close(fig)


def test_head_scores_highlight_by_default_the_head_whose_first_score_ends_highest() -> None:
    scores = torch.zeros(3, 2, 4)
    scores[-1, 1, 3] = 0.9
    fig = plot.head_scores_over_training([0, 1, 2], {"prefix matching": scores})
    assert [line.get_label() for line in fig.axes[0].get_lines() if line.get_linewidth() > 1.5] == ["L1H3"]
    plt.close(fig)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"highlight": [(2, 0)]}, "highlight's layer must be an integer in \\[0, 1\\], got 2"),
        ({"highlight": [(0, 0)] * 7}, "highlight at most 6 heads, got 7"),
    ],
)
def test_head_scores_reject_bad_highlight(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plot.head_scores_over_training([0, 1], {"copying": rand(2, 2, 3)}, **kwargs)
    plt.close("all")


@pytest.mark.parametrize(
    ("name", "case_id"),
    [("ablated_loss_grid", "chapter 7's four panels, long titles"), ("icl_with_heads_removed", "styled")],
)
def test_chapter_7_legends_cover_no_panel(name: str, case_id: str) -> None:
    """One legend, below the panels (inside a panel it covered the curves, or could)."""
    fig = case(name, case_id)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    panels = data_axes(fig)
    assert all(ax.get_legend() is None for ax in panels), "no legend inside a panel"
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in panels), "the legend covers a panel"
    plt.close(fig)


def test_ablation_effects_panels_keep_apart_and_legend_below() -> None:
    """Each panel's texts (title, tick labels) stay clear of the other panels (as y-labels, the long names ran into
    each other), and one legend sits below the panels, covering none."""
    fig = case("ablation_effects", "chapter 7's ten ablations, three panels")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    panels = data_axes(fig)
    boxes = [ax.get_tightbbox(renderer) for ax in panels]  # the panel with every text drawn for it
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(other) for other in boxes[:i]), f"panel {i}'s texts run into another panel"
    assert all(ax.get_legend() is None for ax in panels), "no legend inside a panel"
    (legend,) = fig.legends
    legend_box = legend.get_window_extent(renderer)
    assert not any(legend_box.overlaps(box) for box in boxes), "the legend covers a panel"
    assert [t.get_text() for t in legend.get_texts()] == ["full ablation", "pattern-preserving ablation"]
    plt.close(fig)


def test_icl_with_heads_removed_draws_the_intact_model_black() -> None:
    """The intact curve is thick and black without being asked (the captions of chapter 7 say so); the others keep
    their styles or take the colour cycle."""
    fig = case("icl_with_heads_removed", "styled")
    lines = {line.get_label(): line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")}
    assert list(lines) == ["intact", "induction heads removed", "layer 0 removed"]
    assert same_color(lines["intact"].get_color(), "black") and lines["intact"].get_linewidth() == 2
    assert same_color(lines["induction heads removed"].get_color(), "C0"), "the first colour of the cycle"
    assert (
        same_color(lines["layer 0 removed"].get_color(), "tab:red") and lines["layer 0 removed"].get_linestyle() == "--"
    )
    plt.close(fig)


@pytest.mark.parametrize(
    ("name", "args", "match"),
    [
        ("output_value_map_diagram", (0, 4), "d must be a positive integer"),
        ("output_value_map_diagram", (8, 2.5), "r must be a positive integer"),
        ("induction_circuit_diagram", ("", "B"), "first must be a token name"),
        ("ablation_diagram", ("L0H0", "a very long name"), "reader must be a head name"),
        ("chapter_times", ({}, 90.0), "seconds must name at least one chapter"),
        ("time_to_phase_change", ({"steps": 1}, {"steps": 1, "seconds": 1}), "book must give exactly"),
        ("ablation_by_checkpoint", ([1, 2], [0.1, 0.2], {}, {"a": [1, 2]}), "must each name at least one"),
        ("ablation_by_checkpoint", ([1, 2], [0.1, 0.2], {"a": [1]}, {"a": [1, 2]}), "one value per step"),
    ],
)
def test_diagrams_reject_bad_input(name: str, args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        getattr(plot, name)(*args)
    plt.close("all")


def test_new_figure_allows_at_most_three_panels_a_row() -> None:
    from lib.show._common import new_figure

    with pytest.raises(ValueError, match="ncols must be at most 3"):
        new_figure(4)
    fig, axes = new_figure(3, 1, width=5.0)
    assert fig.get_size_inches()[0] <= 8.0 and axes.shape == (1, 3), "three 5-inch panels shrink to the column"
    plt.close(fig)


def public_functions() -> set[str]:
    """Names of the public functions defined in the topic modules of lib.show.plot."""
    names = set()
    for info in pkgutil.iter_modules(plot.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{plot.__name__}.{info.name}")
        names |= {
            name
            for name, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")
        }
    return names


def test_all_lists_every_public_function() -> None:
    assert len(plot.__all__) == len(set(plot.__all__))
    assert set(plot.__all__) == public_functions()
    assert all(inspect.isfunction(getattr(plot, name)) for name in plot.__all__)


def test_every_function_has_a_case() -> None:
    assert {name for name, *_ in CASES} == set(plot.__all__)


# Cases added after the parametrized tests above were collected: run through the same checks, and listed in CASES
# for test_every_function_has_a_case.
OCR_RULES = [
    "city -> language",
    "city -> language (counterfactual)",
    "country -> calling code",
    "profession -> colour",
    "sport -> music",
]
CIRCUIT_CASES: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
    (
        "composition_score_grid",
        "Q, K and V",
        (
            {kind: rand(2, 3, high=0.3) for kind in "QKV"},
            {kind: rand(5, 2, 3, low=0.1, high=0.15) for kind in "QKV"},
        ),
        {"row_names": ["L0H0", "L0H1"], "column_names": ["L1H0", "L1H1", "L1H2"]},
    ),
    ("composition_score_grid", "one kind, default labels", ({"K": rand(2, 2)}, {"K": rand(4)}), {}),
    (
        "qk_cut_effects",
        "chapter 5's four conditions, two induction heads",
        (
            {
                name: {"prefix": rand(2), "repeated": 4.0 * k / 3, "first": 4.0 + k, "bos": rand(2)}
                for k, name in enumerate(("intact", "keys cut", "queries cut", "both cut"))
            },
        ),
        {"even_prefix": 0.1, "chance": math.log(64)},
    ),
    (
        "ocr_mean_rank",
        "chapter 4's five rules and five reported models",
        (
            {run: {p: rand(3, high=6.0) for p in OCR_RULES} for run in ("before fine-tuning", "after fine-tuning")},
            dict.fromkeys(OCR_RULES, 5.5),
        ),
        {"reference": {f"Model-{k}-7B-v0.3": rand(5, high=4.5).tolist() for k in range(5)}, "title": "tiny"},
    ),
]
CASES += CIRCUIT_CASES


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [pytest.param(name, args, kwargs, id=f"{name}-{case}") for name, case, args, kwargs in CIRCUIT_CASES],
)
def test_circuit_figure(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    test_figure(name, args, kwargs)


# Every case, CIRCUIT_CASES included.
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [pytest.param(name, args, kwargs, id=f"{name}-{case}") for name, case, args, kwargs in CASES],
)
def test_readable_in_the_page_column(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    fig = getattr(plot, name)(*args, **kwargs)
    width_px, text_px, text = displayed_size(fig)
    assert width_px <= COLUMN_PX + 1, f"{name}: saved {width_px:.0f} px wide, wider than the page column"
    assert text_px >= MIN_TEXT_PX, f"{name}: {text!r} is {text_px:.1f} px on the page (figure {width_px:.0f} px wide)"
    assert panels_per_row(fig) <= 3, f"{name}: more than three panels side by side"
    assert not overlapping_titles(fig), f"{name}: panel titles {overlapping_titles(fig)} overlap"
    plt.close(fig)


def overlapping_titles(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of panel titles whose drawn boxes overlap (a long title running into its neighbour's)."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    titles = [(ax.get_title(), ax.title.get_window_extent(renderer)) for ax in fig.axes if ax.get_title()]
    return [(a, b) for i, (a, box) in enumerate(titles) for b, other in titles[:i] if box.overlaps(other)]


def test_qk_cut_effects_needs_every_measure() -> None:
    with pytest.raises(ValueError, match="cuts must map each condition"):
        plot.qk_cut_effects({"intact": {"prefix": [0.9]}}, even_prefix=0.1, chance=4.0)


def test_positional_qk_heads_checks_shapes() -> None:
    with pytest.raises(ValueError, match="\\(heads, seq, seq\\) and shares \\(heads,\\)"):
        plot.positional_qk_heads(torch.zeros(2, 3, 4), torch.zeros(2))


def test_phase_change_signatures_scale_must_be_known() -> None:
    with pytest.raises(ValueError, match="scale must be 'last' or 'peak'"):
        plot.phase_change_signatures([1, 2], {"a": [1.0, 2.0]}, scale="max")  # type: ignore[arg-type]


def test_symmetric_bound_is_the_largest_magnitude_over_all_arrays() -> None:
    from lib.show._common import symmetric_bound

    assert symmetric_bound([torch.tensor([0.5, -3.0]), np.array([[2.0]]), [1.0]]) == 3.0
    assert symmetric_bound(iter([np.zeros(3)])) == 1.0, "all zero: a unit scale, not an empty one"


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "match"),
    [
        ("estimates_with_intervals", ({},), {"xlabel": "x"}, "1 to 4 groups"),
        ("estimates_with_intervals", ({"g": {"a": (0.5, 0.6, 0.4)}},), {"xlabel": "x"}, "low end 0.6 is above"),
        ("scores_by_checkpoint", ([1, 2], {"p": {"a": [1.0]}}), {"ylabels": ["y"]}, "one value per step"),
        ("scores_by_checkpoint", ([1, 2], {"p": {"a": [1.0, 2.0]}}), {"ylabels": []}, "one label per panel"),
        (
            "scores_by_checkpoint",
            ([1, 2], {"p": {"a": [1.0, 2.0]}}),
            {"ylabels": ["y"], "intervals": {"p": {"a": [0.5, 2.5]}}},
            "intervals must be \\(2, 2\\)",
        ),
        (
            "scores_by_checkpoint",
            ([1, 2], {"p": {"a": [1.0, 2.0]}}),
            {"ylabels": ["y"], "references": {"p": [(0.0, "a"), (1.0, "b"), (2.0, "c"), (3.0, "d"), (4.0, "e")]}},
            "at most 4 reference lines",
        ),
        ("bars_by_group", ({"g1": {"a": 1.0}, "g2": {"b": 1.0}},), {"ylabel": "y"}, "the same 1 to 4 series"),
        ("curves_against", ({},), {"xlabel": "x", "ylabel": "y"}, "at least one curve"),
        ("curves_against", ({"a": ([1, 2], [1])},), {"xlabel": "x", "ylabel": "y"}, "one length"),
    ],
)
def test_chapter_8_figures_reject_bad_input(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        getattr(plot, name)(*args, **kwargs)
    plt.close("all")


def test_estimates_with_intervals_draws_each_interval_where_it_is() -> None:
    """Each row's bar spans its interval and its dot sits at its value, top row first; the reference lines are in
    the legend."""
    rows = {"first": (0.9, 0.7, 1.2), "second": (-0.1, -0.3, 0.05)}
    fig = plot.estimates_with_intervals({"model": rows}, xlabel="share", references=[(0.0, "none"), (1.0, "all")])
    ax = data_axes(fig)[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["first", "second"]
    assert list(ax.get_yticks()) == [1, 0]  # the first row on top
    bars = [c for c in ax.collections if len(c.get_segments()) == 2][0].get_segments()
    spans = sorted((float(seg[0][0]), float(seg[1][0]), float(seg[0][1])) for seg in bars)
    assert np.allclose(spans, [(-0.3, 0.05, 0.0), (0.7, 1.2, 1.0)])
    assert {"none", "all"} <= {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    plt.close(fig)


def test_bars_by_group_puts_each_series_value_in_its_group() -> None:
    groups = {"before": {"smeared": 0.2, "control": 0.1}, "during": {"smeared": 0.5, "control": 0.15}}
    fig = plot.bars_by_group(groups, ylabel="fall")
    heights = [round(p.get_height(), 6) for p in data_axes(fig)[0].patches]
    assert heights == [0.2, 0.5, 0.1, 0.15]  # one series after the other, in group order
    plt.close(fig)


def test_scores_by_checkpoint_draws_the_given_intervals() -> None:
    fig = plot.scores_by_checkpoint(
        [1, 2, 3],
        {"removed": {"whole": [0.1, 0.3, 0.4]}},
        ylabels=["nats"],
        intervals={"removed": {"whole": [[0.0, 0.2, 0.35], [0.2, 0.5, 0.45]]}},
    )
    segments = [c for c in data_axes(fig)[0].collections if len(c.get_segments()) == 3][0].get_segments()
    ends = [(float(s[0][1]), float(s[1][1])) for s in segments]
    assert np.allclose(ends, [(0.0, 0.2), (0.2, 0.5), (0.35, 0.45)])
    plt.close(fig)


def test_scores_by_checkpoint_styles_a_measurement_as_asked() -> None:
    fig = plot.scores_by_checkpoint(
        [1, 2],
        {"share": {"all positions": [0.8, 0.9], "eligible only": [0.4, 0.5]}},
        ylabels=["share"],
        styles={"eligible only": ("tab:green", "--")},
    )
    lines = {line.get_label(): line for line in data_axes(fig)[0].get_lines()}
    assert (
        same_color(lines["eligible only"].get_color(), "tab:green") and lines["eligible only"].get_linestyle() == "--"
    )
    assert lines["all positions"].get_linestyle() == "-"
    plt.close(fig)


def test_pair_against_other_pairs_marks_the_pair_and_every_other_pair() -> None:
    others = {"zero": {"repeated": torch.tensor([0.05, 0.08, 0.02])}}
    fig = plot.pair_against_other_pairs({"zero": {"repeated": 0.6}}, others, pair_label="the pair")
    (ax,) = data_axes(fig)
    points = [c.get_offsets() for c in ax.collections]
    assert sorted(len(p) for p in points) == [1, 3], "one marker for the pair, one point per other pair"
    pair_point = next(p for p in points if len(p) == 1)
    assert pair_point[0][1] == pytest.approx(60.0), "shares drawn in percent"
    assert ax.get_xticklabels()[0].get_text() == "zero"
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"the pair", "another pair of the layer"}
    plt.close(fig)


@pytest.mark.parametrize(
    ("pair", "others", "match"),
    [
        ({"zero": {"repeated": 0.5}}, {"mean": {"repeated": [0.1]}}, "replacements"),
        ({"zero": {"repeated": 0.5}}, {"zero": {"non-repeated": [0.1]}}, "kinds"),
        ({}, {}, "same kinds"),
    ],
)
def test_pair_against_other_pairs_rejects_mismatched_input(pair: Any, others: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plot.pair_against_other_pairs(pair, others)


def test_smear_before_loss_draws_each_change_from_zero_to_one() -> None:
    sigma = {"seed 0": torch.tensor([[0.5], [0.3], [0.25], [0.2]])}
    loss = {"seed 0": torch.tensor([4.0, 3.9, 1.0, 0.1])}
    fig = plot.smear_before_loss([0, 10, 20, 30], sigma, loss)
    (ax,) = data_axes(fig)
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    np.testing.assert_allclose(lines["σ(α) of an induction head"], [0.0, 2 / 3, 5 / 6, 1.0], rtol=1e-5)
    np.testing.assert_allclose(lines["loss on repeated tokens"], [0.0, 0.1 / 3.9, 3.0 / 3.9, 1.0], rtol=1e-5)
    plt.close(fig)
    with pytest.raises(ValueError, match="same panels"):
        plot.smear_before_loss([0, 10, 20, 30], sigma, {"seed 1": loss["seed 0"]})


def test_path_cut_grid_puts_sources_in_rows_in_percent() -> None:
    shares = torch.zeros(2, 3)
    shares[1, 2] = 0.15
    fig = plot.path_cut_grid(shares, ["L0H0", "L0H1"], ["L1H0", "L1H1", "L1H2"])
    image = fig.axes[0].get_images()[0]
    assert image.get_array()[1, 2] == pytest.approx(15.0)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["L0H0", "L0H1"]
    plt.close(fig)
    with pytest.raises(ValueError, match="shape"):
        plot.path_cut_grid(shares, ["L0H0"], ["L1H0", "L1H1", "L1H2"])


# --- across model sizes (chapter 10): appended cases, run through the same checks
STEPS10 = [0, 20, 40, 60]
SIZES_CASES: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
    (
        "family_curves",
        "two panels, three sizes, three seeds",
        (
            {
                panel: {f"2L d{w}": [(STEPS10, rand(4, low=0.1, high=4.0)) for _ in range(3)] for w in (64, 128, 256)}
                for panel in ("loss on repeated tokens", "best layer-1 prefix matching")
            },
        ),
        {"ylabels": ["nats", "score"], "levels": {"loss on repeated tokens": 1.0}, "title": "tiny"},
    ),
    (
        "onsets_against",
        "steps against parameters, tokens against B x C with a law",
        (
            {
                "by size": {"2L d64": ([4.5e4] * 3, [340, 360, 380]), "2L d128": ([1.5e5] * 3, [300, 320, 330])},
                "by batch": {"B8": ([392] * 3, [2e5, 2.2e5, 2.1e5]), "B32": ([1568] * 3, [5e5, 5.5e5, 6e5])},
            },
        ),
        {
            "xlabels": ["parameters", "B x C"],
            "ylabels": ["onset step", "onset tokens"],
            "references": {"by batch": ([392, 1568], [1e7, 2e7], "Aoyama et al.")},
        },
    ),
]
SIZES_CASES.append(
    (
        "head_score_grids",
        "two models of 12 x 12 heads, a few above the threshold",
        ({"GPT-2 small": rand(12, 12), "random weights": rand(12, 12, high=0.1)},),
        {"threshold": 0.75, "title": "Prefix matching"},
    )
)
CASES += SIZES_CASES

# Chapter 9 (fuzzy induction): appended, run through the same checks as CIRCUIT_CASES.
HEAD_MEASURES = ("prefix matching", "cross prefix matching", "ov copy", "ov translation")
FUZZY_CASES: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
    (
        "fuzzy_loss_curves",
        "chapter 9's run, two controls, three other seeds",
        (list(range(0, 2501, 50)), rand(51, high=4.0), rand(51, high=4.0)),
        {
            "window": (600, 800),
            "controls": {"exact-only model": rand(51, high=4.0), "one layer": rand(51, high=4.0)},
            "other_seeds": {f"seed {s}": rand(51, high=4.0) for s in (1, 2, 3)},
            "chance": math.log(64),
        },
    ),
    ("fuzzy_loss_curves", "alone", (STEPS, rand(4, high=4.0), rand(4, high=4.0)), {}),
    (
        "cross_language_heads",
        "three models of 2 x 4 heads",
        ({name: {m: rand(2, 4) for m in HEAD_MEASURES} for name in ("fuzzy", "exact only", "at initialisation")},),
        {},
    ),
]
CASES += FUZZY_CASES


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [pytest.param(name, args, kwargs, id=f"{name}-{case}") for name, case, args, kwargs in SIZES_CASES],
)
def test_sizes_figure(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    test_figure(name, args, kwargs)
    test_readable_in_the_page_column(name, args, kwargs)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [pytest.param(name, args, kwargs, id=f"{name}-{case}") for name, case, args, kwargs in FUZZY_CASES],
)
def test_fuzzy_figure(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    test_figure(name, args, kwargs)
    test_readable_in_the_page_column(name, args, kwargs)


def test_family_curves_draws_one_line_per_run_one_colour_per_group() -> None:
    runs = {"a": [(STEPS10, [4, 3, 1, 0.5])] * 2, "b": [(STEPS10, [4, 4, 4, 4])] * 3}
    fig = plot.family_curves({"loss": runs}, ylabels=["nats"], levels={"loss": 1.0})
    (ax,) = data_axes(fig)
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == 4]
    assert len(curves) == 5
    assert {line.get_color() for line in curves[:2]} == {"tab:red"} and curves[2].get_color() == "tab:blue"
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"a", "b"}
    assert ax.get_xlabel() == "training step"
    plt.close(fig)
    fig = plot.family_curves({"loss": runs}, ylabels=["nats"], xlabel="training tokens (millions)")
    assert data_axes(fig)[0].get_xlabel() == "training tokens (millions)"
    plt.close(fig)
    with pytest.raises(ValueError, match="same, non-empty groups"):
        plot.family_curves({"loss": runs, "score": {"a": runs["a"]}}, ylabels=["nats", "score"])
    with pytest.raises(ValueError, match="one y label per panel"):
        plot.family_curves({"loss": runs}, ylabels=[])


def test_onsets_against_is_log_log_one_point_per_run() -> None:
    fig = plot.onsets_against({"p": {"a": ([1, 1], [10, 30]), "b": ([4, 4], [20, 40])}}, xlabels=["x"], ylabels=["y"])
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    np.testing.assert_allclose(np.concatenate([c.get_offsets()[:, 1] for c in ax.collections]), [10, 30, 20, 40])
    assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []
    plt.close(fig)
    with pytest.raises(ValueError, match="positive"):
        plot.onsets_against({"p": {"a": ([1], [0])}}, xlabels=["x"], ylabels=["y"])


def test_cross_language_heads_rejects_missing_measures() -> None:
    with pytest.raises(ValueError, match="lacks"):
        plot.cross_language_heads({"fuzzy": {"prefix matching": rand(2, 4)}})
    with pytest.raises(ValueError, match="1 to 4 models"):
        plot.cross_language_heads({})
