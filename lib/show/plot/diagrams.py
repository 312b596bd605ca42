"""Schematics of the book's mechanisms, drawn in code so that they stay in sync with the chapters.

- :func:`induction_circuit_diagram`: the ``[A][B] … [A] → [B]`` circuit, a previous-token head in layer 0 and an
  induction head in layer 1 joined by K-composition (chapter 5).
- :func:`output_value_map_diagram`: the one-layer model's output-value map stored factorized, ``W_O W_Vᵀ``, or
  merged, one matrix ``W_OV`` (chapter 2).
- :func:`ablation_diagram`: full vs pattern-preserving ablation of a layer-0 head (chapter 7).

They take the names and sizes they print (tokens, dimensions, heads) and return a Figure, like every plot.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from lib.core import validate
from lib.show._common import MAX_WIDTH, MIN_FONT, finish_figure, new_figure

TEXT = MIN_FONT + 1
"""Font size (points) of a diagram's labels (its smaller notes: one point less, :data:`~lib.show._common.MIN_FONT`)."""

COLOURS = {
    "token": "#dbe9f6",
    "layer 0": "#fde0c5",
    "layer 1": "#d9f0d3",
    "output": "#f2f2f2",
    "removed": "#f4cccc",
    "arrow": "#333333",
    "attention": "#1f77b4",
    "composition": "#2ca02c",
    "removed edge": "#c00000",
}
"""Fill and line colours shared by the diagrams: one colour per layer, blue for attention, green for composition."""


def _box(
    ax: Axes,
    x: float,
    y: float,
    text: str,
    *,
    colour: str,
    width: float = 1.2,
    height: float = 0.55,
    dashed: bool = False,
    edge: str = "#555555",
    size: float = TEXT,
) -> None:
    """A rounded box centred at ``(x, y)`` with ``text`` in it."""
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=colour,
            edgecolor=edge,
            lw=1.2,
            ls="--" if dashed else "-",
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=size)


def _arrow(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    *,
    colour: str = COLOURS["arrow"],
    bend: float = 0.0,
    lw: float = 1.4,
    dashed: bool = False,
) -> None:
    """An arrow from ``start`` to ``end``, bent by ``bend`` (0 = straight; positive bends to the left)."""
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color=colour,
            lw=lw,
            ls="--" if dashed else "-",
            connectionstyle=f"arc3,rad={bend}",
            shrinkA=2,
            shrinkB=2,
        )
    )


def _canvas(ncols: int, height: float) -> tuple[Figure, list[Axes]]:
    """A figure of ``ncols`` panels with the axes turned off, as wide as the page column allows."""
    fig, axes = new_figure(ncols, 1, width=MAX_WIDTH / ncols, height=height)
    panels: list[Axes] = list(axes[0])
    for ax in panels:
        ax.set_axis_off()
    return fig, panels


def induction_circuit_diagram(first: str = "A", second: str = "B") -> Figure:
    """The induction circuit on ``[first][second] … [first]``: a layer-0 previous-token head writes "the previous
    token was ``first``" at ``second``'s position; the layer-1 induction head at the second ``first`` matches its
    query against that key (K-composition) and copies ``second`` to the output.

    Args:
        first, second: the names of the two tokens (short strings, e.g. ``"A"``, ``"B"``).
    """
    for name, value in (("first", first), ("second", second)):
        if not isinstance(value, str) or not 1 <= len(value) <= 6:
            raise ValueError(f"{name} must be a token name of 1 to 6 characters, got {value!r}")
    fig, (ax,) = _canvas(1, 5.0)
    xs = [0.0, 1.7, 3.4, 5.1]  # positions: [first], [second], …, [first]
    y_token, y_l0, y_l1, y_out = 0.0, 1.55, 3.35, 4.75
    for x in xs:  # each position's residual stream
        ax.plot([x, x], [y_token + 0.3, y_out - 0.3], color="#bbbbbb", lw=3, zorder=0, solid_capstyle="butt")
    for x, name in zip(xs, [first, second, "…", first]):
        _box(ax, x, y_token, f"[{name}]" if name != "…" else name, colour=COLOURS["token"], width=1.0)
    ax.text(xs[0] - 0.8, y_token, "tokens", ha="right", va="center", fontsize=TEXT)
    ax.text(xs[0] - 0.8, y_l0, "layer 0:\nprevious-token\nhead", ha="right", va="center", fontsize=TEXT)
    ax.text(xs[0] - 0.8, y_l1, "layer 1:\ninduction\nhead", ha="right", va="center", fontsize=TEXT)
    # layer 0: at [second], attend to the previous position and write "previous token = first"
    _box(ax, xs[1], y_l0, f"writes\nprev = {first}", colour=COLOURS["layer 0"], width=1.3, height=0.7)
    _arrow(ax, (xs[0] + 0.1, y_l0 - 0.55), (xs[1] - 0.66, y_l0 - 0.05), colour=COLOURS["attention"], bend=0.25)
    ax.text(
        (xs[0] + xs[1]) / 2 - 0.05,
        y_l0 - 0.9,
        "attends to the\nprevious token",
        ha="center",
        va="center",
        fontsize=TEXT - 1,
        color=COLOURS["attention"],
    )
    # layer 1: the query [first] at the last position matches the key "prev = first" at [second]
    _box(ax, xs[1], y_l1, f"key:\nprev = {first}", colour=COLOURS["layer 1"], width=1.3, height=0.7, dashed=True)
    _box(ax, xs[3], y_l1, f"query: {first}", colour=COLOURS["layer 1"], width=1.3)
    _arrow(ax, (xs[1], y_l0 + 0.36), (xs[1], y_l1 - 0.36), colour=COLOURS["composition"], lw=2.2)
    ax.text(
        xs[1] + 0.12,
        (y_l0 + y_l1) / 2 - 0.1,
        "K-composition:\nthe key reads what\nlayer 0 wrote",
        ha="left",
        va="center",
        fontsize=TEXT - 1,
        color=COLOURS["composition"],
    )
    _arrow(ax, (xs[3] - 0.66, y_l1 + 0.12), (xs[1] + 0.66, y_l1 + 0.12), colour=COLOURS["attention"], bend=0.3)
    ax.text(
        (xs[1] + xs[3]) / 2,
        y_l1 - 0.2,
        f"attends where\nthe key matches\n(query {first} = prev {first})",
        ha="center",
        va="center",
        fontsize=TEXT - 1,
        color=COLOURS["attention"],
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
    )
    # the value at [second] is [second] itself: the OV circuit copies it to the output
    _box(ax, xs[3], y_out, f"predicts [{second}]", colour=COLOURS["output"], width=1.6)
    _arrow(ax, (xs[1] + 0.3, y_l1 + 0.36), (xs[3] - 0.8, y_out - 0.05), colour=COLOURS["arrow"], bend=-0.2)
    ax.text(
        xs[1] + 0.9,
        y_out + 0.05,
        f"the value there is [{second}]:\ncopied (OV circuit)",
        ha="center",
        va="center",
        fontsize=TEXT - 1,
    )
    ax.set_xlim(xs[0] - 2.6, xs[3] + 1.0)
    ax.set_ylim(y_token - 0.5, y_out + 0.5)
    ax.set_title(f"The induction circuit: [{first}][{second}] … [{first}] → [{second}]", fontsize=TEXT + 1)
    return finish_figure(fig)


def output_value_map_diagram(d: int, r: int) -> Figure:
    """The one-layer model's two ways of storing the output-value map, side by side: factorized (``W_Vᵀ`` then
    ``W_O``, through ``r`` numbers) and merged (one ``d × d`` matrix ``W_OV``).

    Args:
        d: the model width (= vocabulary size, one-hot tokens).
        r: the inner width of the factorized map.
    """
    d = validate.positive_int("d", d)
    r = validate.positive_int("r", r)
    fig, axes = _canvas(2, 4.2)
    bag = f"attention-weighted\nbag of tokens ({d})"
    logits = f"logits over the\nvocabulary ({d})"
    for ax in axes:
        _box(ax, 0, 0, bag, colour=COLOURS["token"], width=2.4, height=0.75)
        _box(ax, 0, 4.2, logits, colour=COLOURS["output"], width=2.4, height=0.75)
        ax.set_xlim(-1.9, 1.9)
        ax.set_ylim(-1.3, 4.9)
    ax = axes[0]
    _box(ax, 0, 1.3, f"$W_V^\\top$  ({r} × {d})", colour=COLOURS["layer 0"], width=2.0, height=0.5)
    _box(ax, 0, 2.1, f"{r} numbers", colour="white", width=1.0 if r < d else 2.0, height=0.4)
    _box(ax, 0, 2.9, f"$W_O$  ({d} × {r})", colour=COLOURS["layer 0"], width=2.0, height=0.5)
    for y0, y1 in ((0.38, 1.05), (1.55, 1.9), (2.3, 2.65), (3.15, 3.82)):
        _arrow(ax, (0, y0), (0, y1))
    ax.set_title(f"factorized: $W_O W_V^\\top$\ntwo {d} × {r} matrices trained", fontsize=TEXT + 1)
    ax = axes[1]
    _box(ax, 0, 2.1, f"$W_{{OV}}$\n({d} × {d})", colour=COLOURS["layer 1"], width=2.0, height=1.9)
    for y0, y1 in ((0.38, 1.15), (3.05, 3.82)):
        _arrow(ax, (0, y0), (0, y1))
    ax.set_title(f"merged: $W_{{OV}}$\none {d} × {d} matrix trained", fontsize=TEXT + 1)
    text = "the same functions when r = d" if r >= d else f"r = {r} < d = {d}: rank at most {r}"
    fig.text(
        0.5,
        0.015,
        f"Same input and output; only how the map is stored and trained differs\n({text}).",
        ha="center",
        fontsize=TEXT,
    )
    return finish_figure(fig)


def ablation_diagram(removed: str = "head A", reader: str = "head B") -> Figure:
    """Full vs pattern-preserving ablation of a layer-0 head ``removed``, seen from a layer-1 head ``reader``: in a
    full ablation ``reader``'s queries and keys see the changed residual stream and its pattern may move; in a
    pattern-preserving one its pattern is forced back to the one recorded on the intact model.

    Args:
        removed, reader: head names, e.g. ``"L0H0"`` and ``"L1H0"``.
    """
    for name, value in (("removed", removed), ("reader", reader)):
        if not isinstance(value, str) or not 1 <= len(value) <= 8:
            raise ValueError(f"{name} must be a head name of 1 to 8 characters, got {value!r}")
    fig, axes = _canvas(2, 4.4)
    for ax, kind in zip(axes, ("full", "pattern-preserving")):
        ax.plot([0, 0], [0.0, 4.0], color="#bbbbbb", lw=5, zorder=0, solid_capstyle="butt")
        ax.text(-0.12, 0.0, "residual\nstream", ha="right", va="bottom", fontsize=TEXT)
        _box(ax, 0, 4.3, "logits → loss", colour=COLOURS["output"], width=1.7, height=0.45)
        # the removed head: its output is zeroed before it reaches the stream
        _box(
            ax,
            1.3,
            1.0,
            f"{removed}\noutput set to 0",
            colour=COLOURS["removed"],
            width=2.0,
            height=0.75,
            size=TEXT - 1,
        )
        _arrow(ax, (0.4, 1.0), (0.02, 1.0), colour=COLOURS["removed edge"], lw=1.6, dashed=True)
        ax.text(0.2, 1.17, "×", ha="center", va="bottom", fontsize=TEXT + 3, color=COLOURS["removed edge"])
        # the later head: values always read the (changed) stream; its pattern depends on the kind of ablation
        _box(ax, 1.3, 2.9, f"{reader}", colour=COLOURS["layer 1"], width=1.2, height=0.5)
        _arrow(ax, (0.02, 2.75), (0.72, 2.9))
        ax.text(0.35, 2.7, "values", ha="left", va="top", fontsize=TEXT - 1)
        _arrow(ax, (1.9, 2.9), (0.02, 3.5), bend=0.3)
        ax.text(1.2, 3.55, "writes", ha="left", va="bottom", fontsize=TEXT - 1)
        if kind == "full":
            _arrow(ax, (0.02, 1.9), (1.3, 2.62), colour=COLOURS["attention"], bend=-0.3)
            ax.text(
                1.45,
                2.05,
                "queries, keys read the\nchanged stream: the\npattern is recomputed",
                ha="left",
                va="center",
                fontsize=TEXT - 1,
                color=COLOURS["attention"],
            )
            title = "full ablation"
            note = f"removes {removed}'s own effect and\nits effect through {reader}'s attention"
        else:
            _box(
                ax,
                2.85,
                2.9,
                "pattern\nrecorded\non the\nintact\nmodel",
                colour="white",
                width=1.2,
                height=1.5,
                size=TEXT - 1,
            )
            _arrow(ax, (2.23, 2.9), (1.92, 2.9), colour=COLOURS["attention"], lw=2)
            title = "pattern-preserving ablation"
            note = f"removes only what {removed} wrote;\nevery head attends where it did"
        ax.text(1.6, -0.35, note, ha="center", va="top", fontsize=TEXT - 1)
        ax.set_xlim(-1.3, 3.6)
        ax.set_ylim(-1.0, 4.7)
        ax.set_title(title, fontsize=TEXT + 1)
    return finish_figure(fig)
