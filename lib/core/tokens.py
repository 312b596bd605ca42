"""Token conventions shared by the book's sequence models (chapters 5-8): the BOS token and the evaluation seed."""

from lib.core import seeds

BOS = 0
"""The beginning-of-sequence token of every sequence model (chapters 5-8); in chapters 5-7 the content tokens are
``1 .. vocab - 1``, in chapter 8 token 0 is the tokenizer's ``<|bos|>``."""

SHIPPED_EVAL_SEED = 1234
"""The evaluation seed the shipped runs in ``lib/data`` logged their measurements with (``scripts/train_natural.py``):
a check that re-measures a shipped log draws its probes with this seed, which ``CIRCUITS_SEED`` does not move."""

EVAL_SEED = seeds.seed(SHIPPED_EVAL_SEED)
"""Seeds every fixed evaluation set: chapters 5-7's (:func:`lib.induction.sequences.eval_sets`) and chapter 8's probes
(:func:`lib.induction.natural.probes.probe_tokens`), so re-runs measure on the same tokens. :data:`SHIPPED_EVAL_SEED`,
moved by the seed sweep's ``CIRCUITS_SEED`` (:func:`lib.core.seeds.seed`)."""
