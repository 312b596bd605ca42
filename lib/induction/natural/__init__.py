"""Induction heads in natural text (chapter 8).

- :mod:`~lib.induction.natural.corpus`: the pinned Python corpus, its BPE tokenizer, windows and batches.
- :mod:`~lib.induction.natural.runs`: the three trained models as shipped, and their training logs.
- :mod:`~lib.induction.natural.probes`: per-window losses and ICL scores (also split by eligibility), bootstrap
  intervals, the logged probes and an Olsson-style one, the share of queries whose strongest key is a chosen one.
- :mod:`~lib.induction.natural.edits`: removing only a head's attention to prefix-matching keys.
- :mod:`~lib.induction.natural.slim`: a slim attention-only model with shortformer positions, pre-LayerNorm on or
  off and any ``d_head``, hookable by chapter 5's names (issue 29's runs).
- :mod:`~lib.induction.natural.recipes`: issue 29's named runs (B1, B2, A) and the loop that trains one while it logs.
"""
