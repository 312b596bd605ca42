"""Sphinx extension of the book's build: the References page labels each entry the way the chapters cite it, and a
textual citation links as a whole.

sphinxcontrib-bibtex's default style ("alpha") labels an entry ``[HZG+25]`` and lower-cases its title ("Generalization
or hallucination? understanding out-of-context ..."), while the chapters write "Huang et al. [2025]". This registers the
pybtex style ``book`` (``_config.yml``: ``bibtex_default_style: book``): labels ``Huang et al., 2025`` (one or two
authors named; three or more as "et al."), titles as the paper writes them, entries sorted by author and year.

sphinxcontrib-bibtex's ``author_year`` referencing style links only the year of a textual citation ("Huang et al.
[2025]" with "2025" clickable, a 4-character target). The referencing style ``author_year_linked``
(``bibtex_reference_style``) is the same style with the whole textual citation as the link.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle
from pybtex.style.template import field, sentence
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import BasicAuthorYearTextualReferenceStyle
from sphinxcontrib.bibtex.style.template import join, join2, post_text, pre_text, reference, year


def author_year(entry: Any) -> str:
    """``Huang et al., 2025`` / ``Lyu and Li, 2020`` / ``Elhage, 2021`` from a pybtex entry."""
    people = entry.persons.get("author", [])
    # a corporate author is written in braces in the .bib file ({Paper Notes}): the label drops them
    last = [" ".join(p.last_names).strip("{}") for p in people] or [entry.fields.get("organization", entry.key)]
    names = last[0] if len(last) == 1 else f"{last[0]} and {last[1]}" if len(last) == 2 else f"{last[0]} et al."
    return f"{names}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries: Iterable[Any]) -> Iterator[str]:
        for entry in sorted_entries:
            yield author_year(entry)


class BookStyle(UnsrtStyle):
    default_label_style = AuthorYearLabels
    default_sorting_style = SortingStyle

    def format_title(self, e: Any, which_field: str, as_sentence: bool = True) -> Any:
        """The title as written (the parent class capitalizes its first letter and lower-cases the rest)."""
        title = field(which_field)
        return sentence[title] if as_sentence else title


@dataclass
class LinkedTextualReferenceStyle(BasicAuthorYearTextualReferenceStyle):
    """``Huang et al. [2025]`` with the authors, the brackets and the year in one link."""

    def inner(self, role_name: str) -> Any:
        return reference[
            join(sep=self.text_reference_sep)[
                self.person.author_or_editor_or_title(full="s" in role_name),
                join[
                    self.bracket.left,
                    join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, year, post_text],
                    self.bracket.right,
                ],
            ]
        ]


@dataclass
class LinkedAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's ``author_year`` with :class:`LinkedTextualReferenceStyle` for textual citations."""

    def __post_init__(self) -> None:
        super().__post_init__()
        linked = LinkedTextualReferenceStyle(
            bracket=self.bracket_textual,
            person=self.person,
            text_reference_sep=self.text_reference_sep,
            pre_text_sep=self.pre_text_sep,
            post_text_sep=self.post_text_sep,
        )
        self.styles[:] = [linked if type(s) is BasicAuthorYearTextualReferenceStyle else s for s in self.styles]
        self.role_style.update((role, linked) for role in linked.role_names())


def setup(app: Any) -> dict[str, Any]:
    """Sphinx entry point (``_config.yml`` names this file under ``sphinx.local_extensions``)."""
    from pybtex.plugin import register_plugin
    from sphinxcontrib.bibtex.plugin import register_plugin as register_referencing

    register_plugin("pybtex.style.formatting", "book", BookStyle)
    register_referencing("sphinxcontrib.bibtex.style.referencing", "author_year_linked", LinkedAuthorYearReferenceStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
