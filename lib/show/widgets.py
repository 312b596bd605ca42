"""ipywidgets explorers. Each redraws a figure from ``lib.show.plot``; the chapter shows that function's
static output beside the widget, because widgets need a live kernel and do not run in the rendered book.
Their browser-side twins, which need no kernel, are in :mod:`lib.show.interactive`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import display
from matplotlib.figure import Figure

from lib.core.heads import head_names, parse_head_name
from lib.show import plot
from lib.show._common import Array, symmetric_bound


def figure_explorer(draw: Callable[..., Figure], controls: Mapping[str, widgets.Widget]) -> widgets.VBox:
    """A box of ``controls`` above an output area showing ``draw(**values)`` (a Figure), redrawn on change."""
    out = widgets.Output()

    def redraw(_: object = None) -> None:
        with out:
            out.clear_output(wait=True)
            fig = draw(**{name: w.value for name, w in controls.items()})
            display(fig)
            plt.close(fig)

    for w in controls.values():
        w.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), out])


def ocr_checkpoint_explorer(
    blocks: Mapping[str, Mapping[int, Array]], train_columns: Array, **plot_kwargs: Any
) -> widgets.VBox:
    """Chapter 2: a slider over training checkpoints and a factorized/merged toggle, redrawing the heatmap on one
    colour scale per model over all its checkpoints (as its browser-side and static twins draw it).

    Args:
        blocks: arm -> step -> ``(rows, n_subjects)`` output-value block (columns in display order).
        train_columns: column indices of training subjects (marked on the heatmap).
        plot_kwargs: keyword arguments of :func:`lib.show.plot.ocr_ov_blocks` (labels, title).
    """
    steps = sorted(next(iter(blocks.values())))
    bounds = {arm: symmetric_bound(by_step.values()) for arm, by_step in blocks.items()}
    controls = {
        "arm": widgets.ToggleButtons(options=list(blocks), description="model"),
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description="step", continuous_update=False),
    }
    return figure_explorer(
        lambda arm, step: plot.ocr_ov_blocks(
            {f"{arm}, step {step}": blocks[arm][step]}, train_columns, bound=bounds[arm], **plot_kwargs
        ),
        controls,
    )


def attention_explorer(
    patterns: torch.Tensor | np.ndarray, steps: Sequence[int], tokens: Array | None = None
) -> widgets.VBox:
    """A checkpoint slider and a head selector over attention patterns on one sequence.

    Args:
        patterns: ``(n_checkpoints, n_layers, n_heads, seq, seq)``, e.g. one pattern per checkpoint.
        steps: the ``n_checkpoints`` training steps. tokens: ``(seq,)`` for the axis labels.
    Static twin: :func:`lib.show.plot.attention_before_during_after`.
    """
    steps = [int(s) for s in steps]
    _, layers, heads = patterns.shape[:3]
    names = head_names(layers, heads)
    controls = {
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description="step", continuous_update=False),
        "head": widgets.Dropdown(options=names, value=names[-1], description="head"),
    }

    def draw(step: int, head: str) -> Figure:
        layer, h = parse_head_name(head)
        return plot.attention_pattern(patterns[steps.index(step), layer, h], tokens, title=f"{head} at step {step}")

    return figure_explorer(draw, controls)


def ablation_explorer(
    losses: Mapping[str, torch.Tensor | np.ndarray],
    steps: Sequence[int],
    names: Sequence[str],
    *,
    period: int | None = None,
) -> widgets.VBox:
    """Chapter 7: pick an ablation kind, a head and a checkpoint; see one sequence's per-token loss with and without it.

    Args:
        losses: kind -> ``(n_checkpoints, n_ablations, seq - 1)`` per-token loss of one sequence; ablation 0
            is the intact model, ablation ``i`` is named ``names[i]``.
        steps: the ``n_checkpoints`` training steps. period: the sequence's repeat period.
    Static twin: :func:`lib.show.plot.ablated_loss_grid`.
    """
    steps = [int(s) for s in steps]
    controls = {
        "kind": widgets.ToggleButtons(options=list(losses), description="ablation"),
        "head": widgets.Dropdown(options=names[1:], value=names[1], description="remove"),
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description="step", continuous_update=False),
    }

    def draw(kind: str, head: str, step: int) -> Figure:
        v = losses[kind][steps.index(step)]
        return plot.ablated_loss_along_sequence(
            v[0], v[names.index(head)], period=period, title=f"{kind} ablation of {head} at step {step}"
        )

    return figure_explorer(draw, controls)
