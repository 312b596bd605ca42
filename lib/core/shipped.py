"""Results a bench script computed once and the package ships as JSON in ``lib/data/`` (chapters load them where
recomputing would take longer than a chapter may)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
"""``lib/data/``: where shipped results live."""


def load_results(path: Path | str, required: Collection[str], *, what: str, made_by: str) -> dict:
    """The JSON object at ``path``, checked to hold the top-level keys ``required``.

    Args:
        what: what the file holds, for the error ("prior-knowledge bench results").
        made_by: the command that writes it ("bench/prior_knowledge.py --json").

    Raises:
        ValueError: no file at ``path`` (saying how to make it), or a file without the ``required`` keys.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no {what} at {path}: run {made_by} {path}")
    data = json.loads(path.read_text())
    missing = sorted(set(required) - set(data)) if isinstance(data, dict) else sorted(required)
    if missing:
        raise ValueError(f"{path} lacks {missing}: not a file of {made_by}")
    return data
