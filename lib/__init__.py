"""Shared code of the course book *Circuits from Scratch*.

One module per concept; chapters import what they need, e.g. ``from lib import device, train``.
Heavy imports (transformer_lens) stay inside the modules that need them.

Importing ``lib`` sets torch's CPU thread count once (:func:`lib.device.configure_threads`: one thread
unless you chose a number with ``OMP_NUM_THREADS`` or ``torch.set_num_threads``).
"""

from lib import device as _device

__version__ = "0.1.0"

_device.configure_threads()
