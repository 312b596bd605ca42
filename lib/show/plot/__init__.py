"""Every static figure the chapters show, one module per topic.

Functions take data (tensors, arrays, dicts of numbers) and return a ``matplotlib.figure.Figure``;
they never train. Labels in plain words; diverging colour maps centred at zero for signed weights.
Chapters call them through this package, e.g. ``from lib.show import plot; plot.ocr_loss_curves(...)``.

- :mod:`lib.show.plot.ocr`: out-of-context reasoning (chapters 1-3).
- :mod:`lib.show.plot.lm`: out-of-context reasoning in language models (chapter 4).
- :mod:`lib.show.plot.induction`: induction heads over training (chapters 5 and 8).
- :mod:`lib.show.plot.circuits`: an induction circuit's weights (chapter 5).
- :mod:`lib.show.plot.smear`: smeared keys (chapter 6).
- :mod:`lib.show.plot.ablation`: ablation (chapter 7).
- :mod:`lib.show.plot.natural`: natural text (chapter 8).
- :mod:`lib.show.plot.sizes`: the model family across sizes and batches (chapter 10).
- :mod:`lib.show.plot.fuzzy`: fuzzy induction (chapter 9).
- :mod:`lib.show.plot.performance`: the Performance page's figures (drawn by ``bench/run_all.py``).
- :mod:`lib.show.plot.diagrams`: schematics of the mechanisms (chapters 2, 5 and 7), drawn in code.
- :mod:`lib.show._common`: the helpers they share (conversion to NumPy, axes set-up, labels, layout).
"""

from lib.show._common import sharp_notebook_figures
from lib.show.plot.ablation import (
    ablated_loss_along_sequence,
    ablated_loss_grid,
    ablation_effects,
    ablation_over_training,
    icl_with_heads_removed,
    pair_against_other_pairs,
    path_cut_grid,
    zero_against_mean,
)
from lib.show.plot.circuits import circuit_matrices, composition_score_grid, qk_cut_effects
from lib.show.plot.diagrams import ablation_diagram, induction_circuit_diagram, output_value_map_diagram
from lib.show.plot.fuzzy import cross_language_heads, fuzzy_loss_curves
from lib.show.plot.induction import (
    attention_before_during_after,
    attention_pattern,
    head_scores_over_training,
    icl_score_curve,
    induction_head_classifier,
    loss_along_sequence,
    loss_by_position_image,
    loss_pca_trajectory,
    phase_change_curves,
    phase_change_signatures,
    positional_qk_heads,
)
from lib.show.plot.lm import ocr_interval_curves, ocr_mean_rank, ocr_rank_curves
from lib.show.plot.natural import (
    ablation_by_checkpoint,
    bars_by_group,
    curves_against,
    estimates_with_intervals,
    loss_by_position_curves,
    scores_by_checkpoint,
)
from lib.show.plot.ocr import (
    ocr_directions,
    ocr_held_out_by_arm,
    ocr_loss_curves,
    ocr_margin_grid,
    ocr_one_step,
    ocr_ov_blocks,
    ocr_pair_losses,
    ocr_rank_sweep,
    ocr_spectra,
    ocr_split,
    ocr_token_layout,
    ocr_training_draw,
)
from lib.show.plot.performance import chapter_times, time_to_phase_change
from lib.show.plot.sizes import family_curves, head_score_grids, onsets_against
from lib.show.plot.smear import (
    arm_icl_by_kind,
    arm_loss_curves,
    smear_before_loss,
    smear_off_losses,
    smear_sigma_over_training,
)

sharp_notebook_figures()  # every chapter imports this package before it draws

__all__ = [
    # out-of-context reasoning (chapters 1-4)
    "ocr_split",
    "ocr_token_layout",
    "ocr_loss_curves",
    "ocr_ov_blocks",
    "ocr_rank_sweep",
    "ocr_pair_losses",
    "ocr_spectra",
    "ocr_mean_rank",
    "ocr_margin_grid",
    "ocr_one_step",
    "ocr_directions",
    "ocr_training_draw",
    "ocr_held_out_by_arm",
    "ocr_interval_curves",
    "ocr_rank_curves",
    # induction heads (chapter 5)
    "phase_change_curves",
    "icl_score_curve",
    "loss_by_position_image",
    "loss_pca_trajectory",
    "head_scores_over_training",
    "induction_head_classifier",
    "attention_pattern",
    "attention_before_during_after",
    "loss_along_sequence",
    "circuit_matrices",
    "composition_score_grid",
    "phase_change_signatures",
    "positional_qk_heads",
    "qk_cut_effects",
    # smeared keys (chapter 6)
    "arm_loss_curves",
    "smear_sigma_over_training",
    "arm_icl_by_kind",
    "smear_before_loss",
    "smear_off_losses",
    # ablation (chapter 7)
    "ablation_effects",
    "ablation_over_training",
    "icl_with_heads_removed",
    "pair_against_other_pairs",
    "path_cut_grid",
    "ablated_loss_along_sequence",
    "ablated_loss_grid",
    "zero_against_mean",
    # natural text (chapter 8)
    "loss_by_position_curves",
    "ablation_by_checkpoint",
    "estimates_with_intervals",
    "scores_by_checkpoint",
    "bars_by_group",
    "curves_against",
    # across model sizes (chapter 10)
    "family_curves",
    "head_score_grids",
    "onsets_against",
    # fuzzy induction (chapter 9)
    "fuzzy_loss_curves",
    "cross_language_heads",
    # diagrams (chapters 2, 5 and 7)
    "output_value_map_diagram",
    "induction_circuit_diagram",
    "ablation_diagram",
    # the Performance page (bench/run_all.py)
    "chapter_times",
    "time_to_phase_change",
]
