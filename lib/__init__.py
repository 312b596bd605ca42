"""Shared code of the course book *Circuits from Scratch*.

One module per concept; chapters import what they need, e.g. ``from lib import device, train``.
Heavy imports (transformer_lens) stay inside the modules that need them.
"""

__version__ = "0.1.0"
