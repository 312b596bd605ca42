"""Interactive figures that work in the rendered book without a kernel: plotly figures with a slider over
training checkpoints (and a dropdown over heads), drawn by plotly.js in the reader's browser.

The explorers of :mod:`lib.show.widgets` redraw a matplotlib figure from Python, so they need a live kernel (Colab,
Jupyter). These figures carry their data in the page instead, so every checkpoint is precomputed: the builders
keep at most ``max_frames`` checkpoints (evenly spaced, first and last included) and round the values, which keeps
the data a chapter embeds in its page small (see ``tests/show/test_interactive.py``).

A chapter shows a figure with ``interactive.show(fig)``. In the built book the HTML output calls plotly.js, which
this module's Sphinx extension (``setup``, listed in ``_config.yml``) copies from the installed ``plotly`` package
into the book's ``_static/`` and loads on the pages that have such a figure: no CDN, so it works offline. JupyterLab,
Notebook 7 and VS Code draw the figure from its plotly MIME type with their own plotly.js; Colab gets plotly's
standard HTML, which loads plotly.js from plotly's CDN (Colab is online anyway).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from lib.core import validate
from lib.core.heads import head_names
from lib.show._common import Array, symmetric_bound, to_numpy

#: The file the Sphinx extension writes into the book's ``_static/`` folder.
PLOTLY_JS = "plotly.min.js"


#: Marks a page that needs plotly.js (plotly's own class name for a figure's ``div``).
FIGURE_CLASS = "plotly-graph-div"


#: The page's content column is about 690 px wide; the figures fill it and never ask for more.
WIDTH = 690


#: Shown on the figure's ``div`` when plotly.js is missing (a notebook viewer that runs no plotly).
NO_PLOTLY = (
    "This interactive figure needs plotly.js, which this viewer does not load: "
    "the static figure below shows the same data (and, run as a notebook, so does the explorer widget)."
)


#: plotly.js options of every figure: no mode bar (its buttons add nothing to a slider), resizes with the column.
CONFIG: dict[str, Any] = {"displayModeBar": False, "responsive": True}


FONT_PX = 14
"""Every text of an interactive figure is at least this many CSS pixels (10.5 pt), as legible as the page's text."""
TITLE = {"font": {"size": FONT_PX + 2}, "y": 0.98, "yanchor": "top"}


def thin(steps: Sequence[int], max_frames: int) -> list[int]:
    """At most ``max_frames`` of ``steps``, evenly spaced by index, always keeping the first and the last."""
    max_frames = validate.int_at_least("max_frames", max_frames, 2)
    steps = [int(s) for s in steps]
    if not steps:
        raise ValueError("steps must hold at least one checkpoint, got an empty sequence")
    if len(steps) <= max_frames:
        return steps
    picks = np.unique(np.round(np.linspace(0, len(steps) - 1, max_frames)).astype(int))
    return [steps[i] for i in picks]


def _compact(values: Array) -> np.ndarray:
    """``values`` as float32: plotly writes a NumPy array into the page as base64 of its bytes (about 5.3
    characters a value for float32, against 11 for float64 and 2 to 20 for decimal text)."""
    return to_numpy(values).astype(np.float32)


def _percent(values: Array) -> np.ndarray:
    """Weights in ``[0, 1]`` as whole percents in uint8: 1.3 characters a value in the page."""
    return np.clip(np.round(to_numpy(values).astype(np.float64) * 100), 0, 100).astype(np.uint8)


def _slider(steps: Sequence[int], active: int, pad: int) -> dict[str, Any]:
    """A slider whose positions animate to the frame named after each step, instantly; ``pad`` pixels below the
    plot area (room for the x axis's labels and title)."""
    jump = {"mode": "immediate", "frame": {"duration": 0, "redraw": True}, "transition": {"duration": 0}}
    return {
        "active": active,
        "currentvalue": {"prefix": "training step "},
        "pad": {"t": pad},
        "steps": [{"label": str(s), "method": "animate", "args": [[str(s)], jump]} for s in steps],
    }


def _dropdown(labels: Sequence[str], visible: Sequence[Sequence[bool]], active: int) -> dict[str, Any]:
    """A dropdown whose entry ``i`` shows the traces where ``visible[i]`` is True."""
    return {
        "type": "dropdown",
        "active": active,
        "x": 1.0,
        "xanchor": "right",
        "y": 1.12,
        "yanchor": "bottom",
        "buttons": [
            {"label": label, "method": "restyle", "args": [{"visible": list(v)}]} for label, v in zip(labels, visible)
        ],
    }


def _check_steps(name: str, steps: Sequence[int], n: int) -> list[int]:
    steps = [int(s) for s in steps]
    if len(steps) != n:
        raise ValueError(f"{name} must have one step per checkpoint ({n}), got {len(steps)}")
    return steps


def ocr_checkpoint_figure(
    blocks: Mapping[str, Mapping[int, Array]],
    train_columns: Array,
    *,
    max_frames: int = 21,
    title: str = "Implication x subject block during training",
) -> go.Figure:
    """Chapter 2: one heatmap per model (stacked), a slider over training checkpoints (the twin of
    :func:`lib.show.widgets.ocr_checkpoint_explorer`).

    Args:
        blocks: model name -> step -> ``(rows, n_subjects)`` output-value block (columns in display order);
            every model has the same steps.
        train_columns: column indices of the training subjects, marked with a triangle above each panel.
        max_frames: the most checkpoints kept (see :func:`thin`).
    Colours: red/blue centred at zero, one scale a model for all its frames, from minus to plus its largest
    ``|value|`` over the checkpoints kept, as the static twin (:func:`lib.show.plot.ocr_ov_blocks` with a model's
    snapshots on one row): a colour means the same value at every step of the slider. The frames carry only the
    blocks; the scale is set once, on the figure's traces.
    """
    if not blocks:
        raise ValueError("blocks must hold at least one model, got an empty mapping")
    arms = list(blocks)
    all_steps = sorted(blocks[arms[0]])
    for arm in arms:
        if sorted(blocks[arm]) != all_steps:
            raise ValueError(
                f"blocks[{arm!r}] must have the steps of blocks[{arms[0]!r}] ({all_steps}), got {sorted(blocks[arm])}"
            )
    steps = thin(all_steps, max_frames)
    marks = to_numpy(train_columns).astype(int).tolist()
    fig = make_subplots(rows=len(arms), cols=1, subplot_titles=arms, vertical_spacing=0.16)

    def heatmaps(step: int) -> list[go.Heatmap]:
        return [go.Heatmap(z=_compact(blocks[arm][step])) for arm in arms]

    bounds = [symmetric_bound(blocks[arm][s] for s in steps) for arm in arms]
    for i, (trace, bound) in enumerate(zip(heatmaps(steps[-1]), bounds)):
        fig.add_trace(trace, row=i + 1, col=1)
        domain = fig.get_subplot(i + 1, 1).yaxis.domain
        fig.data[-1].update(
            zmin=-bound,
            zmax=bound,
            colorscale="RdBu_r",
            colorbar={"len": domain[1] - domain[0], "y": domain[1], "yanchor": "top", "thickness": 12},
            hovertemplate="subject column %{x}<br>value row %{y}<br>%{z:.3f}<extra></extra>",
        )
        fig.add_trace(
            go.Scatter(
                x=marks,
                y=[-1.2] * len(marks),
                mode="markers",
                marker={"symbol": "triangle-down", "size": 6},
                marker_color="black",
                hoverinfo="skip",
                showlegend=False,
                cliponaxis=False,
            ),
            row=i + 1,
            col=1,
        )
        fig.update_yaxes(autorange="reversed", showticklabels=False, title_text="implication value", row=i + 1, col=1)
        fig.update_xaxes(showticklabels=False, row=i + 1, col=1)
    fig.update_xaxes(title_text="subject (grouped by fact value; ▼ = implication seen in training)", row=len(arms))
    heat = [2 * i for i in range(len(arms))]
    fig.frames = [go.Frame(name=str(s), data=heatmaps(s), traces=heat) for s in steps]
    fig.update_layout(
        title={"text": title, **TITLE},
        font={"size": FONT_PX},
        width=None,
        height=220 * len(arms) + 190,
        margin={"l": 40, "r": 20, "t": 70, "b": 110},
        template="simple_white",
        sliders=[_slider(steps, len(steps) - 1, 45)],
    )
    return fig


def attention_figure(
    patterns: Array,
    steps: Sequence[int],
    tokens: Array | None = None,
    *,
    max_frames: int = 13,
    title: str = "Attention pattern during training",
) -> go.Figure:
    """Chapter 5: one head's attention pattern on one sequence, a dropdown over heads and a slider over
    checkpoints (the twin of :func:`lib.show.widgets.attention_explorer`).

    Args:
        patterns: ``(n_checkpoints, n_layers, n_heads, seq, seq)`` attention patterns (query, key).
        steps: the ``n_checkpoints`` training steps. tokens: ``(seq,)`` token ids, shown on hover.
        max_frames: the most checkpoints kept (see :func:`thin`).
    """
    p = to_numpy(patterns)
    if p.ndim != 5 or p.shape[-1] != p.shape[-2]:
        raise ValueError(f"patterns must have shape (checkpoints, layers, heads, seq, seq), got {p.shape}")
    all_steps = _check_steps("steps", steps, p.shape[0])
    kept = thin(all_steps, max_frames)
    _, layers, heads, seq, _ = p.shape
    ids = list(range(seq)) if tokens is None else to_numpy(tokens).astype(int).tolist()
    if len(ids) != seq:
        raise ValueError(f"tokens must have one id per position ({seq}), got {len(ids)}")
    # the axes' categories, read on hover: "position: token", BOS for token 0
    labels = [f"{i}: {'BOS' if t == 0 else t}" for i, t in enumerate(ids)]
    names = head_names(layers, heads)

    def traces(step: int) -> list[np.ndarray]:  # one (seq, seq) pattern per head
        k = all_steps.index(step)
        return [p[k, l, h] for l in range(layers) for h in range(heads)]

    fig = go.Figure()
    for i, z in enumerate(traces(kept[-1])):
        fig.add_trace(
            go.Heatmap(
                z=_percent(z),
                zmin=0.0,
                zmax=100,
                colorscale="Blues",
                visible=i == len(names) - 1,
                name=names[i],
                colorbar={"thickness": 12, "title": {"text": "weight (%)"}},
                x=labels,
                y=labels,
                hovertemplate="from %{y}<br>to %{x}<br>weight %{z}%<extra></extra>",
            )
        )
    fig.frames = [
        go.Frame(name=str(s), data=[go.Heatmap(z=_percent(z)) for z in traces(s)], traces=list(range(len(names))))
        for s in kept
    ]
    # ticks show every 8th position; hovering shows the position and its token
    ticks = {"tickmode": "array", "tickvals": labels[::8], "ticktext": [str(i) for i in range(0, seq, 8)]}
    fig.update_yaxes(
        autorange="reversed", title_text="from (query position)", scaleanchor="x", constrain="domain", **ticks
    )
    fig.update_xaxes(title_text="attends to (key position)", constrain="domain", tickangle=0, **ticks)
    fig.update_layout(
        title={"text": title, **TITLE},
        font={"size": FONT_PX},
        height=640,
        margin={"l": 60, "r": 20, "t": 90, "b": 110},
        template="simple_white",
        sliders=[_slider(kept, len(kept) - 1, 60)],
        updatemenus=[_dropdown(names, np.eye(len(names), dtype=bool).tolist(), len(names) - 1)],
    )
    return fig


def ablation_figure(
    losses: Mapping[str, Array],
    steps: Sequence[int],
    names: Sequence[str],
    *,
    period: int | None = None,
    max_frames: int = 16,
    title: str = "Per-token loss with and without a head",
) -> go.Figure:
    """Chapter 7: one sequence's per-token loss, intact and with a head removed, one panel per ablation kind;
    a dropdown over what is removed and a slider over checkpoints (the twin of
    :func:`lib.show.widgets.ablation_explorer`).

    Args:
        losses: kind -> ``(n_checkpoints, n_ablations, seq - 1)`` per-token loss; ablation 0 is the intact model,
            ablation ``i`` is named ``names[i]``.
        steps: the ``n_checkpoints`` training steps. period: the sequence's repeat period (marks where the
            current token has been seen before). max_frames: the most checkpoints kept (see :func:`thin`).
    """
    if not losses:
        raise ValueError("losses must hold at least one ablation kind, got an empty mapping")
    kinds = list(losses)
    v = {kind: to_numpy(losses[kind]) for kind in kinds}
    first = v[kinds[0]]
    if first.ndim != 3 or any(x.shape != first.shape for x in v.values()):
        raise ValueError(
            "losses must map every kind to one (checkpoints, ablations, seq - 1) array, "
            f"got shapes {[x.shape for x in v.values()]}"
        )
    if len(names) != first.shape[1] or len(names) < 2:
        raise ValueError(f"names must name the intact model and each ablation ({first.shape[1]}), got {len(names)}")
    all_steps = _check_steps("steps", steps, first.shape[0])
    kept = thin(all_steps, max_frames)
    removed = list(names[1:])
    x = list(range(1, first.shape[2] + 1))
    fig = make_subplots(
        rows=len(kinds),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=[f"{k} ablation" for k in kinds],
    )

    def ys(step: int) -> list[np.ndarray]:
        k = all_steps.index(step)
        # per panel: the intact loss, then one line per ablation
        return [_compact(v[kind][k, j]) for kind in kinds for j in range(len(names))]

    start = ys(kept[-1])
    for panel in range(len(kinds)):
        for j, name in enumerate(names):
            intact = j == 0
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=start[panel * len(names) + j],
                    mode="lines+markers",
                    name="intact" if intact else "head removed",
                    legendgroup="intact" if intact else "removed",
                    showlegend=panel == 0 and j <= 1,
                    visible=intact or j == 1,
                    line={"color": "black" if intact else "#d62728", "width": 1.5},
                    marker={"size": 4},
                    hovertemplate=f"{'intact' if intact else name}: %{{y}} nats at position %{{x}}<extra></extra>",
                ),
                row=panel + 1,
                col=1,
            )
        if period is not None:
            fig.add_vline(x=period + 1.5, line={"dash": "dash", "color": "green", "width": 1.5}, row=panel + 1, col=1)
        fig.update_yaxes(title_text="loss (nats)", row=panel + 1, col=1)
    fig.update_xaxes(title_text="position of the predicted token", row=len(kinds), col=1)
    n_traces = len(kinds) * len(names)
    extra = []
    if period is not None:  # a legend entry for the dashed lines
        dashed = {"dash": "dash", "color": "green", "width": 1.5}
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dashed, name="current token seen before"))
        extra = [True]
    visible = [[j % len(names) in (0, i + 1) for j in range(n_traces)] + extra for i in range(len(removed))]
    fig.frames = [
        go.Frame(name=str(s), data=[go.Scatter(y=y) for y in ys(s)], traces=list(range(n_traces))) for s in kept
    ]
    fig.update_layout(
        title={"text": title, **TITLE},
        font={"size": FONT_PX},
        height=240 * len(kinds) + 270,
        margin={"l": 60, "r": 20, "t": 140, "b": 120},
        template="simple_white",
        legend={"orientation": "h", "y": 1.05, "yanchor": "bottom", "x": 0},
        sliders=[_slider(kept, len(kept) - 1, 55)],
        updatemenus=[_dropdown([f"remove {n}" for n in removed], visible, 0)],
    )
    return fig


def page_html(fig: go.Figure, div_id: str | None = None) -> str:
    """The figure as an HTML fragment that draws it with the page's plotly.js (no ``<script src>`` of its own), once
    the page is parsed (the book loads plotly.js deferred); without plotly.js the ``div`` shows :data:`NO_PLOTLY`
    instead of raising a JavaScript error."""
    div_id = div_id or f"figure-{uuid.uuid4().hex[:12]}"
    spec = pio.to_json({**fig.to_plotly_json(), "config": CONFIG}, validate=False)
    height = int(fig.layout.height or 450)
    return (
        f'<div id="{div_id}" class="{FIGURE_CLASS}" style="width:100%;max-width:{WIDTH}px;height:{height}px;">'
        f"</div>\n<script>\n(function () {{\n"
        f"  var fig = {spec};\n"
        f"  function draw() {{\n"
        f'    var el = document.getElementById("{div_id}");\n'
        f"    if (!el) return;\n"
        f"    if (!window.Plotly) {{ el.style.height = 'auto'; el.textContent = {json.dumps(NO_PLOTLY)}; return; }}\n"
        f"    Plotly.newPlot(el, fig.data, fig.layout, fig.config)"
        f".then(function () {{ return Plotly.addFrames(el, fig.frames || []); }});\n"
        f"  }}\n"
        # the book loads plotly.js deferred (the page paints first): it has run by DOMContentLoaded
        f"  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', draw); else draw();\n"
        f"}})();\n</script>"
    )


class Interactive:
    """Displays a plotly figure in every place the book runs; ``interactive.show(fig)`` as a cell's last line.

    ``text/html`` (the book; see the module docstring) and plotly's own MIME type (JupyterLab, Notebook 7,
    VS Code); in Colab, plotly's standard HTML instead.
    """

    def __init__(self, fig: go.Figure) -> None:
        self.fig = fig

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        text = f"<interactive figure: {self.fig.layout.title.text}>"
        if "google.colab" in sys.modules:
            # Colab shows text/html in a sandboxed frame of its own: plotly.js must come with it.
            # auto_play=False: plotly would otherwise play through every frame on load.
            colab_html = pio.to_html(self.fig, full_html=False, include_plotlyjs="cdn", config=CONFIG, auto_play=False)
            return {"text/html": colab_html, "text/plain": text}
        spec = json.loads(pio.to_json({**self.fig.to_plotly_json(), "config": CONFIG}, validate=False))
        return {"application/vnd.plotly.v1+json": spec, "text/html": page_html(self.fig), "text/plain": text}


def show(fig: go.Figure) -> Interactive:
    """Wrap ``fig`` for display (the return value of a cell's last line); see :class:`Interactive`."""
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly.graph_objects.Figure, got {type(fig).__name__}")
    return Interactive(fig)


def embedded_bytes(fig: go.Figure) -> int:
    """Bytes of data (traces, frames, layout) that :func:`page_html` embeds in the page for ``fig``."""
    return len(pio.to_json({**fig.to_plotly_json(), "config": CONFIG}, validate=False).encode())


__all__ = [
    "Interactive",
    "ablation_figure",
    "attention_figure",
    "embedded_bytes",
    "ocr_checkpoint_figure",
    "page_html",
    "show",
    "thin",
]
