"""What every chapter uses, whichever part it belongs to.

- :mod:`~lib.core.device`: cuda, else cpu (mps when asked); one data stream and exactness on every device; seeds;
  torch's thread count.
- :mod:`~lib.core.train`: the one training loop (``TrainConfig``, ``History``, progress bar, checkpoints).
- :mod:`~lib.core.validate`: the checks of public inputs, each a ``ValueError`` that says what is allowed.
- :mod:`~lib.core.heads`: attention heads as ``(layer, head)`` pairs and their ``"L1H3"`` names.
- :mod:`~lib.core.seeds`: the seed sweep's switch, ``CIRCUITS_SEED``, that moves every seed the book chooses.
- :mod:`~lib.core.tokens`: the BOS token and the evaluation seed of the sequence models.
- :mod:`~lib.core.shipped`: results a bench script computed once, shipped as JSON in ``lib/data/``.
"""
