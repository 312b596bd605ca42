"""Induction heads in natural text (chapter 8).

- :mod:`~lib.induction.natural.corpus`: the pinned Python corpus, its BPE tokenizer, windows and batches.
- :mod:`~lib.induction.natural.runs`: the three trained models as shipped, and their training logs.
- :mod:`~lib.induction.natural.probes`: per-window losses and ICL scores (also split by eligibility), bootstrap
  intervals, the logged probes and an Olsson-style one, the share of queries whose strongest key is a chosen one.
- :mod:`~lib.induction.natural.edits`: removing only a head's attention to prefix-matching keys.
"""
