"""A chapter's key results, at the top of its page, filled in from the numbers the chapter computes.

A chapter opens with a "Key results" box (a MyST admonition of class ``key-results``) whose numbers are glue
roles, ``{glue:text}`ch5-window```, each result citing its figure. The code that computes and asserts a number
records it under that name, and prints the text :func:`record` returns, so the box and the printed output show
the same string on every seed and device:

    width = key_results.record("ch5-window", window_width, "d")  # '110'
    assert window_width < 150
    print(f"the loss falls within {width} steps")

The record is an invisible output in myst-nb's glue format (Jupyter and Colab show nothing; the book pastes it
into the box). The learner edition, which has no outputs, shows ``?`` in its place (scripts/make_learner.py).
"""

from __future__ import annotations

import re
from typing import Any

GLUE_PREFIX = "application/papermill.record/"
"""myst-nb's prefix for a glued output that is not shown where it was recorded."""

NAME = re.compile(r"ch[1-9][0-9]?-[a-z0-9]+(?:-[a-z0-9]+)*")
"""A record's name: its chapter, then lower-case words joined by ``-`` (``ch5-window``)."""


def glue_output(name: str, text: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The display data and metadata of the invisible output that records ``text`` under ``name``.

    Raises:
        ValueError: ``name`` is not a chapter's record name (:data:`NAME`).
    """
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(
            f"a key result's name must be 'ch' and its chapter (1-99), then lower-case words joined by '-' "
            f"(as 'ch5-window'), got {name!r}"
        )
    # as a string literal: the book reads a glued text with ast.literal_eval, which would make "6,000" the tuple
    # (6, 0) and "0.50" the number 0.5
    return {GLUE_PREFIX + "text/plain": repr(text)}, {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}}


def record(name: str, value: object, spec: str = "") -> str:
    """Record ``format(value, spec)`` as the key result ``name`` and return that text, for the chapter to print.

    Outside IPython (a plain Python run) nothing is recorded and the text is still returned.

    Raises:
        ValueError: a bad ``name`` (see :func:`glue_output`), or a ``spec`` that cannot format ``value``.
    """
    try:
        text = format(value, spec)
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot format {value!r} with spec {spec!r} for key result {name!r}: {error}") from None
    data, metadata = glue_output(name, text)
    try:
        from IPython import get_ipython
    except ImportError:
        return text
    if get_ipython() is not None:
        from IPython.display import display

        display(data, raw=True, metadata=metadata)
    return text
