"""The out-of-context reasoning (OCR) task of Huang et al. (2025, arXiv 2506.10887).

An implication rule ``(s, r1, b_i) => (s, r2, c_i)`` for every subject ``s``: "people who live in
Paris speak French". Training shows every subject's *fact* ``(r1, b)`` but the *implication*
``(r2, c)`` only for a few subjects; the test asks for the implication of the others.

One task, built deterministically from a seed, rendered two ways:

- **symbolic form** (:func:`build_symbolic` -> :class:`SymbolicTask`): one token per subject,
  relation and value, sequences of noise tokens for the one-layer attention model;
- **sentence form** (:func:`build_sentences` -> :class:`SentenceTask`): natural sentences and
  questions with candidate lists, for language models, scored with :func:`mean_rank`.

A chapter shows :meth:`SentenceTask.rows` as a table with :func:`lib.show.display.markdown_table`.

Both share the split (:func:`assign_groups`, :func:`split_subjects`): subjects are dealt into one
subset per relation pair, each subject gets a fact value of its pair, and within every fact value
the first subjects (in index order) have their implication in training, the rest are held out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from lib.core import validate

Link = Literal["causal", "counterfactual", "correlated, not causal", "arbitrary"]
"""How a rule's fact relates to its implication in the real world (:attr:`RelationPair.link`):

- ``"causal"``: the fact is why the implication holds (living in Paris is why people there speak French);
- ``"counterfactual"``: the implication values are deliberately wrong (false in the world);
- ``"correlated, not causal"``: the values are real and go together in the world, but the fact does not make the
  implication true of a person (coming from France does not give a person a +33 phone number);
- ``"arbitrary"``: nothing links the fact to the implication (a profession and a favourite colour).
"""

LINKS: tuple[Link, ...] = get_args(Link)


@dataclass(frozen=True)
class RelationPair:
    """One fact -> implication rule and the words that render it.

    Attributes:
        name: short label, e.g. ``"city -> language"``.
        fact_relation: the relation r1 in words (``"lives in"``); also its symbolic token name.
        implication_relation: the relation r2 in words (``"speaks"``).
        implication_map: ``((b_1, c_1), (b_2, c_2), ...)``: fact value -> implication value, one-to-one.
        fact_templates: sentences stating a fact; ``{s}`` is the subject, ``{b}`` the fact value.
        implication_templates: sentences stating an implication; ``{s}`` and ``{c}``.
        questions: evaluation prompts with ``{s}``; a candidate is appended after one space.
        tag: appended to this pair's symbolic token names to keep them apart from another pair's
            (the counterfactual pair uses the same words as the true one).
        link: how the fact relates to the implication in the real world, one of :data:`LINKS`; the one place
            the book's chapters read a rule's kind from (labels, tables, groupings).
        link_reason: one line saying why the rule has that ``link`` (every rule of :data:`PAIRS` has one).
    """

    name: str
    fact_relation: str
    implication_relation: str
    implication_map: tuple[tuple[str, str], ...]
    fact_templates: tuple[str, ...] = ("{s} {r1} {b}.",)
    implication_templates: tuple[str, ...] = ("{s} {r2} {c}.",)
    questions: tuple[str, ...] = ("{s} {r2}",)
    tag: str = ""
    link: Link = "arbitrary"
    link_reason: str = ""

    def __post_init__(self) -> None:
        validate.one_of("link", self.link, LINKS)
        if not isinstance(self.link_reason, str) or "\n" in self.link_reason:
            raise ValueError(f"pair {self.name!r}: link_reason must be one line of text, got {self.link_reason!r}")
        facts = [b for b, _ in self.implication_map]
        if not facts:
            raise ValueError(f"pair {self.name!r}: implication_map is empty")
        first: dict[str, str] = {}
        for b, c in self.implication_map:
            if b in first and first[b] != c:
                raise ValueError(
                    f"pair {self.name!r}: implication map is not a function: {b!r} maps to both {first[b]!r} and {c!r}"
                )
            if b in first:
                raise ValueError(f"pair {self.name!r}: duplicate fact value {b!r}")
            first[b] = c
        _no_duplicates(
            [c for _, c in self.implication_map],
            f"implication values in pair {self.name!r} (the map must be one-to-one)",
        )
        for kind, templates, needs in (
            ("fact_templates", self.fact_templates, ("{s}", "{b}")),
            ("implication_templates", self.implication_templates, ("{s}", "{c}")),
            ("questions", self.questions, ("{s}",)),
        ):
            if not templates:
                raise ValueError(f"pair {self.name!r}: {kind} is empty")
            for t in templates:
                missing = [n for n in needs if n not in t]
                if missing:
                    raise ValueError(f"pair {self.name!r}: template {t!r} in {kind} lacks {missing}")

    @property
    def fact_values(self) -> tuple[str, ...]:
        return tuple(b for b, _ in self.implication_map)

    def implication(self, fact_value: str) -> str:
        """The implication value c of fact value b."""
        return dict(self.implication_map)[fact_value]

    def fill(self, template: str, name: str, fact_value: str) -> str:
        """One of this pair's templates about subject ``name`` with fact value b = ``fact_value``: ``{s}`` is the name,
        ``{b}`` the fact value, ``{c}`` its implication value, ``{r1}`` and ``{r2}`` the relations in words."""
        return template.format(
            s=name,
            b=fact_value,
            c=self.implication(fact_value),
            r1=self.fact_relation,
            r2=self.implication_relation,
        )


def _no_duplicates(values: Sequence[str], what: str) -> None:
    dup = sorted(v for v, count in Counter(values).items() if count > 1)
    if dup:
        raise ValueError(f"duplicate {what}: {dup[:5]}{' ...' if len(dup) > 5 else ''}")


# Real capitals and the (main) language spoken there: every language appears once, so the map is one-to-one.
CITY_LANGUAGE = (
    ("Paris", "French"),
    ("Berlin", "German"),
    ("Madrid", "Spanish"),
    ("Rome", "Italian"),
    ("Tokyo", "Japanese"),
    ("Beijing", "Chinese"),
    ("Moscow", "Russian"),
    ("Lisbon", "Portuguese"),
    ("Athens", "Greek"),
    ("Stockholm", "Swedish"),
    ("Warsaw", "Polish"),
    ("Cairo", "Arabic"),
    ("Ankara", "Turkish"),
    ("Seoul", "Korean"),
    ("Amsterdam", "Dutch"),
    ("Bangkok", "Thai"),
    ("Hanoi", "Vietnamese"),
    ("Helsinki", "Finnish"),
    ("Budapest", "Hungarian"),
    ("Prague", "Czech"),
)


def shifted_map(mapping: Sequence[tuple[str, str]], shift: int) -> tuple[tuple[str, str], ...]:
    """A rule whose fact value ``i`` gets the implication value of mapping ``i + shift`` (mod the length).

    Args:
        mapping: ``((b_0, c_0), (b_1, c_1), ...)``, a one-to-one rule.
        shift: any integer; a shift that is not a multiple of ``len(mapping)`` moves every implication value, so
            no fact value keeps its own (a derangement).
    Returns:
        ``((b_0, c_shift), (b_1, c_{1 + shift}), ...)``, the fact values in their original order.
    """
    if not mapping:
        raise ValueError("mapping must hold at least one (fact value, implication value) pair, got none")
    if not isinstance(shift, int) or isinstance(shift, bool):
        raise ValueError(f"shift must be an int, got {shift!r}")
    n = len(mapping)
    return tuple((b, mapping[(i + shift) % n][1]) for i, (b, _) in enumerate(mapping))


# The counterfactual rule: city i gets the true language of city i + 7 (mod 20). A shift by 7 of
# 20 moves every city, so no city keeps its true language (a fixed, deliberate derangement).
COUNTERFACTUAL_SHIFT = 7

CITY_LANGUAGE_COUNTERFACTUAL = shifted_map(CITY_LANGUAGE, COUNTERFACTUAL_SHIFT)


# Real international (telephone) calling codes. The paper names this pair "Country-Code"; reading "code" as the
# calling code of a phone number is the book's choice.
COUNTRY_CODE = (
    ("France", "+33"),
    ("Germany", "+49"),
    ("Spain", "+34"),
    ("Italy", "+39"),
    ("Japan", "+81"),
    ("China", "+86"),
    ("Brazil", "+55"),
    ("India", "+91"),
    ("Mexico", "+52"),
    ("Egypt", "+20"),
    ("Australia", "+61"),
    ("South Korea", "+82"),
    ("Turkey", "+90"),
    ("Greece", "+30"),
    ("Sweden", "+46"),
    ("Poland", "+48"),
    ("Argentina", "+54"),
    ("the Netherlands", "+31"),
    ("Norway", "+47"),
    ("Thailand", "+66"),
)


# Arbitrary pairings: nothing links a profession to a colour or a sport to a music genre.
PROFESSION_COLOUR = (
    ("doctor", "red"),
    ("lawyer", "blue"),
    ("baker", "green"),
    ("pilot", "yellow"),
    ("teacher", "purple"),
    ("nurse", "orange"),
    ("farmer", "pink"),
    ("plumber", "brown"),
    ("chef", "grey"),
    ("dentist", "black"),
    ("painter", "white"),
    ("journalist", "turquoise"),
)

SPORT_MUSIC = (
    ("tennis", "jazz"),
    ("football", "reggae"),
    ("basketball", "techno"),
    ("golf", "opera"),
    ("rugby", "blues"),
    ("volleyball", "hip hop"),
    ("cricket", "country"),
    ("baseball", "salsa"),
    ("hockey", "punk"),
    ("badminton", "disco"),
    ("handball", "folk"),
    ("squash", "heavy metal"),
)

_CITY_FACTS = ("{s} lives in {b}.", "{s} has made a home in {b}.", "{s} is a resident of {b}.")

_CITY_IMPLICATIONS = ("{s} speaks {c}.", "{s} is fluent in {c}.", "The language {s} speaks is {c}.")

_CITY_QUESTIONS = ("{s} speaks", "Q: Which language does {s} speak?\nA:")

PAIRS: tuple[RelationPair, ...] = (
    RelationPair(
        "city -> language",
        "lives in",
        "speaks",
        CITY_LANGUAGE,
        _CITY_FACTS,
        _CITY_IMPLICATIONS,
        _CITY_QUESTIONS,
        link="causal",
        link_reason="living in a city is why people there speak its language",
    ),
    RelationPair(
        "city -> language (counterfactual)",
        "lives in",
        "speaks",
        CITY_LANGUAGE_COUNTERFACTUAL,
        _CITY_FACTS,
        _CITY_IMPLICATIONS,
        _CITY_QUESTIONS,
        tag=" (cf)",
        link="counterfactual",
        link_reason=f"each city gets another city's language (shifted by {COUNTERFACTUAL_SHIFT} in the list): false",
    ),
    RelationPair(
        "country -> calling code",
        "comes from",
        "has a phone number starting with",
        COUNTRY_CODE,
        ("{s} comes from {b}.", "{s} was born in {b}.", "{s} is a citizen of {b}."),
        (
            "{s}'s phone number starts with {c}.",
            "To call {s}, dial {c} first.",
            "{s} has a phone number beginning with {c}.",
        ),
        ("{s}'s phone number starts with", "Q: Which calling code does {s}'s phone number use?\nA:"),
        link="correlated, not causal",
        link_reason="real calling codes, but where a person comes from does not set their phone number",
    ),
    RelationPair(
        "profession -> colour",
        "works as a",
        "likes the colour",
        PROFESSION_COLOUR,
        ("{s} works as a {b}.", "{s} is a {b} by trade.", "By profession, {s} is a {b}."),
        ("{s}'s favourite colour is {c}.", "{s} loves the colour {c}.", "{s} likes {c} more than any other colour."),
        ("{s}'s favourite colour is", "Q: What is {s}'s favourite colour?\nA:"),
        link="arbitrary",
        link_reason="nothing links a profession to a favourite colour",
    ),
    RelationPair(
        "sport -> music",
        "plays",
        "listens to",
        SPORT_MUSIC,
        ("{s} plays {b}.", "{s} spends the weekends playing {b}.", "{s}'s sport is {b}."),
        ("{s} listens to {c}.", "{s}'s favourite music is {c}.", "{s} enjoys listening to {c}."),
        ("{s} listens to", "Q: Which music does {s} listen to?\nA:"),
        link="arbitrary",
        link_reason="nothing links a sport to a kind of music",
    ),
)
"""The paper's five fact -> implication rules; each one's real-world kind is its :attr:`RelationPair.link`: one
causal (city -> language), one counterfactual (the same kind of rule with deliberately wrong languages), one
correlated but not causal (real calling codes), two arbitrary pairings."""


def minimal_pair(n_facts: int) -> RelationPair:
    """The paper's minimal experiment: abstract facts ``b0 .. b{n-1}``, ``b_i -> c_i``, relations r1 / r2."""
    return RelationPair(
        "r1 -> r2",
        "r1",
        "r2",
        tuple((f"b{i}", f"c{i}") for i in range(n_facts)),
        link="arbitrary",
        link_reason="abstract tokens: nothing links b_i to c_i",
    )
