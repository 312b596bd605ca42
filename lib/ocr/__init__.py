"""Part I: out-of-context reasoning (Huang et al. 2025), chapters 1-4.

Data (chapter 1):
- :mod:`~lib.ocr.relations`: the relation pairs (fact -> implication rules) and their value tables.
- :mod:`~lib.ocr.split`: fictitious subjects, their groups, the train/test split.
- :mod:`~lib.ocr.symbolic`: the task as tokens, for the one-layer model.
- :mod:`~lib.ocr.sentences`: the task as sentences, for language models, and the mean-rank metric.

The one-layer model (chapters 2-3):
- :mod:`~lib.ocr.onelayer`: the factorized and merged model, batched over seeds.
- :mod:`~lib.ocr.training`: training it on the task, measuring it, reading its learned map.
- :mod:`~lib.ocr.theory`: the implicit-bias theory's convex problems (min-norm, max-margin) solved.
- :mod:`~lib.ocr.theorem`: the task as that problem, Theorem 2, and Theorem 3's symmetric start.
- :mod:`~lib.ocr.proximal`: a nuclear-norm proximal step for training the merged model.

Language models (chapter 4):
- :mod:`~lib.ocr.lm`: tokenizers, tiny GPT-2 models, loading a pre-trained one, fine-tuning.
- :mod:`~lib.ocr.ranking`: scoring candidate answers, mean rank per relation pair.
- :mod:`~lib.ocr.prior`: the prior-knowledge experiment.
"""
