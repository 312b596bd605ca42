"""Sphinx extension of the book's build: a glossary link shows the term's definition when the reader hovers over it.

Every ``{term}`` link gets the definition's text (its start, up to :data:`PREVIEW_CHARS` characters) as its
``title``: the browser's own tooltip, so it needs no script, works offline and on every page. Named in
``_config.yml``.
"""

from __future__ import annotations

import re
from typing import Any

GLOSSARY = "chapters/glossary"
"""The document that holds the book's ``{glossary}``."""
PREVIEW_CHARS = 280
"""Longest preview: about three lines of a tooltip; a longer definition is cut at a word and ends in "…"."""


SYMBOLS = {
    r"\Rightarrow": "⇒",
    r"\leftarrow": "←",
    r"\times": "×",
    r"\top": "ᵀ",
    r"\ge": "≥",
    r"\le": "≤",
    r"\alpha": "α",
    r"\sigma": "σ",
    r"\ell": "ℓ",
    r"\|": "‖",
}
"""The LaTeX of the glossary's formulas, as plain characters (a tooltip shows text, not typeset math)."""


def plain_math(latex: str) -> str:
    """``W_{OV} = W_O W_V^\top`` -> ``W_OV = W_O W_Vᵀ``: symbols as characters, braces and ``^`` dropped."""
    for command, char in SYMBOLS.items():
        latex = latex.replace(command, char)
    return latex.replace("{", "").replace("}", "").replace("^", "")


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line, cut at the last whole word within ``limit`` characters (then ending in "…")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def definitions(glossary: Any) -> dict[str, str]:
    """Anchor (``term-ICL-score``) -> preview of its definition, for every term of a glossary doctree; the terms
    of one entry ("fact", "implication") share its definition."""
    from docutils import nodes

    found = {}
    for item in glossary.findall(nodes.definition_list_item):
        definition = item.next_node(nodes.definition)
        if definition is None:
            continue
        definition = definition.deepcopy()
        for formula in list(definition.findall(nodes.math)):
            formula.replace_self(nodes.Text(plain_math(formula.astext())))
        text = preview(definition.astext())
        for term in item.findall(nodes.term):
            for anchor in term["ids"]:
                found[anchor] = text
    return found


def term_anchor(refuri: str) -> str | None:
    """``glossary.html#term-ICL-score`` (or ``#term-ICL-score`` on the glossary itself) -> ``term-ICL-score``."""
    found = re.fullmatch(r"(?:(?:[^#]*/)?glossary\.html)?#(term-[^#]+)", refuri)
    return found.group(1) if found else None


def _add_previews(app: Any, doctree: Any, docname: str) -> None:
    from docutils import nodes

    if GLOSSARY not in app.env.all_docs:
        return
    if not hasattr(app, "glossary_previews"):  # once per build (the environment is pickled: not there)
        app.glossary_previews = definitions(app.env.get_doctree(GLOSSARY))
    texts = app.glossary_previews
    for node in doctree.findall(nodes.reference):
        anchor = term_anchor(node.get("refuri", ""))
        if anchor in texts:
            node["reftitle"] = texts[anchor]


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    app.connect("doctree-resolved", _add_previews)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
