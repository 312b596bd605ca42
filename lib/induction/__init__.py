"""Part II: induction heads (Elhage et al. 2021; Olsson et al. 2022), chapters 5-8.

- :mod:`~lib.induction.sequences`: repeated-sequence data and the fixed evaluation sets (chapters 5-7).
- :mod:`~lib.induction.models`: attention-only transformer_lens models and their training (chapter 5).
- :mod:`~lib.induction.handbuilt`: an induction circuit whose weights are set in code (chapter 5).
- :mod:`~lib.induction.scores`: per-token loss, the ICL score, prefix-matching, copying and previous-token scores.
- :mod:`~lib.induction.dynamics`: when the phase change happens, and other readings of curves over training.
- :mod:`~lib.induction.circuits`: QK and OV circuits, composition scores, cutting keys or queries (chapters 5, 7).
- :mod:`~lib.induction.smear`: smeared keys, induction heads in one layer (chapter 6).
- :mod:`~lib.induction.ablation`: removing heads, full and pattern-preserving (chapter 7).
- :mod:`lib.induction.natural`: natural text (chapter 8).
"""
