"""Tables of results on a chapter's page: rows (mappings with the same keys) as Markdown.

display.show_table([{"rule": "city -> language", "mean rank": 0.12}, ...])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def markdown_table(rows: Sequence[Mapping[str, object]]) -> str:
    """A Markdown table of ``rows`` (mappings with the same keys): one column per key, in the first row's order.

    A ``|`` in a cell is escaped and a line break becomes a space, so every row stays one table row.

    Raises:
        ValueError: no rows, or a row whose keys differ from the first row's.
    """
    if not rows:
        raise ValueError("no rows to show")
    keys = list(rows[0])
    for i, row in enumerate(rows):
        if set(row) != set(keys):
            raise ValueError(f"row {i} has keys {list(row)}, the first row has {keys}; every row needs the same keys")
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(row[k]) for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def show_table(rows: Sequence[Mapping[str, object]]) -> None:
    """Show :func:`markdown_table` of ``rows`` in the notebook (rendered like the page's text in the book)."""
    from IPython.display import Markdown, display

    display(Markdown(markdown_table(rows)))


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")
