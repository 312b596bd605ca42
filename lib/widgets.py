"""ipywidgets explorers. Each redraws a figure from ``lib.plot``; the chapter shows that function's
static output beside the widget, because widgets need a live kernel and do not run in the rendered book.
"""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import display


def figure_explorer(draw, controls: dict[str, widgets.Widget]) -> widgets.VBox:
    """A box of ``controls`` above an output area showing ``draw(**values)`` (a Figure), redrawn on change."""
    out = widgets.Output()

    def redraw(_=None):
        with out:
            out.clear_output(wait=True)
            fig = draw(**{name: w.value for name, w in controls.items()})
            display(fig)
            plt.close(fig)

    for w in controls.values():
        w.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(controls.values())), out])


# ---------------------------------------------------------------------------------------------
# Out-of-context reasoning (chapters 1-4)
# ---------------------------------------------------------------------------------------------


def ocr_checkpoint_explorer(blocks: dict[str, dict[int, object]], train_columns, **plot_kwargs) -> widgets.VBox:
    """Chapter 2: a slider over training checkpoints and a factorized/merged toggle, redrawing the heatmap.

    Args:
        blocks: arm -> step -> ``(rows, n_subjects)`` output-value block (columns in display order).
        train_columns: column indices of training subjects (marked on the heatmap).
    """
    from lib.plot import ocr_ov_blocks

    steps = sorted(next(iter(blocks.values())))
    controls = {
        "arm": widgets.ToggleButtons(options=list(blocks), description="model"),
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description="step", continuous_update=False),
    }
    return figure_explorer(
        lambda arm, step: ocr_ov_blocks({f"{arm}, step {step}": blocks[arm][step]}, train_columns, **plot_kwargs),
        controls,
    )


# ---------------------------------------------------------------------------------------------
# Induction heads (chapters 5-7)
# ---------------------------------------------------------------------------------------------


def attention_explorer(patterns, steps, tokens=None) -> widgets.VBox:
    """A checkpoint slider and a head selector over attention patterns on one sequence.

    Args:
        patterns: ``(n_checkpoints, n_layers, n_heads, seq, seq)``, e.g. one pattern per checkpoint.
        steps: the ``n_checkpoints`` training steps. tokens: ``(seq,)`` for the axis labels.
    Static twin: :func:`lib.plot.attention_before_during_after`.
    """
    from lib import plot

    steps = [int(s) for s in steps]
    _, layers, heads = patterns.shape[:3]
    names = [f"L{l}H{h}" for l in range(layers) for h in range(heads)]
    controls = {
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description="step", continuous_update=False),
        "head": widgets.Dropdown(options=names, value=names[-1], description="head"),
    }

    def draw(step: int, head: str):
        layer, h = int(head[1 : head.index("H")]), int(head[head.index("H") + 1 :])
        return plot.attention_pattern(patterns[steps.index(step), layer, h], tokens, title=f"{head} at step {step}")

    return figure_explorer(draw, controls)


def ablation_explorer(losses: dict, steps, names: list[str], *, period: int | None = None) -> widgets.VBox:
    """Chapter 7: pick an ablation kind, a head and a checkpoint; see one sequence's per-token loss with and without it.

    Args:
        losses: kind -> ``(n_checkpoints, n_ablations, seq - 1)`` per-token loss of one sequence; ablation 0
            is the intact model, ablation ``i`` is named ``names[i]``.
        steps: the ``n_checkpoints`` training steps. period: the sequence's repeat period.
    Static twin: :func:`lib.plot.ablated_loss_grid`.
    """
    from lib import plot

    steps = [int(s) for s in steps]
    controls = {
        "kind": widgets.ToggleButtons(options=list(losses), description="ablation"),
        "head": widgets.Dropdown(options=names[1:], value=names[1], description="remove"),
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description="step", continuous_update=False),
    }

    def draw(kind: str, head: str, step: int):
        v = losses[kind][steps.index(step)]
        return plot.ablated_loss_along_sequence(
            v[0], v[names.index(head)], period=period, title=f"{kind} ablation of {head} at step {step}"
        )

    return figure_explorer(draw, controls)
