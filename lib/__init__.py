"""Shared code of the course book *Circuits from Scratch*, grouped by the book's parts.

- :mod:`lib.core`: what every chapter uses: devices and seeds, the training loop, input validation, head names.
- :mod:`lib.ocr`: Part I, out-of-context reasoning (chapters 1-4).
- :mod:`lib.induction`: Part II, induction heads (chapters 5-8).
- :mod:`lib.exercises`: the checks of the chapters' exercises, one module per part.
- :mod:`lib.show`: figures, tables and interactive views; they draw data and never train.
- ``lib/data``: the files chapter 8 ships (corpus, tokenizer, trained runs, pinned token list).

Chapters import modules by name, e.g. ``from lib.induction import scores, smear``. Heavy imports
(transformer_lens) stay inside the functions that need them.

Importing ``lib`` sets torch's CPU thread count once (:func:`lib.core.device.configure_threads`: one thread
unless you chose a number with ``OMP_NUM_THREADS`` or ``torch.set_num_threads``).
"""

from lib.core import device as _device

__version__ = "0.1.0"

_device.configure_threads()
