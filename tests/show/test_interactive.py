"""lib.show.interactive: the plotly figures the rendered book shows without a kernel, their HTML."""

import json
import re
import sys
from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from lib.show import interactive

NAMES = ["intact", "L0H0", "L0H1", "L1H0", "L1H1", "induction heads"]


def ocr_blocks(steps=range(0, 2001, 100)):
    rng = np.random.default_rng(0)
    return {arm: {s: rng.normal(size=(20, 80)) * (s + 1) for s in steps} for arm in ("factorized", "merged")}


def patterns(n_checkpoints=61, layers=2, heads=4, seq=49):
    """Random causal attention patterns, rows summing to 1: ``(n_checkpoints, layers, heads, seq, seq)``."""
    logits = torch.randn(n_checkpoints, layers, heads, seq, seq, generator=torch.Generator().manual_seed(0))
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()
    return logits.masked_fill(~causal, float("-inf")).softmax(-1)


def losses(n_checkpoints=31, seq=48, n_names=6):  # 6 = len(NAMES)
    rng = np.random.default_rng(1)
    return {k: rng.random((n_checkpoints, n_names, seq - 1)) * 3 for k in ("full", "pattern-preserving")}


def frame_named(fig, step):
    return next(f for f in fig.frames if f.name == str(step))


def test_thin_keeps_first_and_last_evenly_spaced():
    assert interactive.thin(range(0, 601, 10), 13) == list(range(0, 601, 50))
    assert interactive.thin([0, 5, 9], 13) == [0, 5, 9]
    picked = interactive.thin(range(0, 2001, 100), 4)
    assert picked[0] == 0 and picked[-1] == 2000 and len(picked) == 4


@pytest.mark.parametrize(("steps", "max_frames"), [([], 4), ([0, 1], 1), ([0, 1], 2.5)])
def test_thin_rejects(steps, max_frames):
    with pytest.raises(ValueError, match="steps|max_frames"):
        interactive.thin(steps, max_frames)


def test_ocr_figure_slides_over_checkpoints_of_both_models():
    blocks = ocr_blocks()
    fig = interactive.ocr_checkpoint_figure(blocks, np.arange(0, 80, 4), max_frames=5)
    assert isinstance(fig, go.Figure)
    steps = [int(f.name) for f in fig.frames]
    assert steps == [0, 500, 1000, 1500, 2000]
    assert [s["label"] for s in fig.layout.sliders[0].steps] == [str(s) for s in steps]
    assert fig.layout.sliders[0].active == len(steps) - 1
    # a frame carries the block of each model at its step
    for step in (0, 1500):
        frame = frame_named(fig, step)
        for trace, arm in zip(frame.data, blocks):
            np.testing.assert_allclose(np.asarray(trace.z), blocks[arm][step], rtol=1e-6)
    # the figure opens at the last step, with the training columns marked above each panel
    np.testing.assert_allclose(np.asarray(fig.data[0].z), blocks["factorized"][2000], rtol=1e-6)
    assert list(fig.data[1].x) == list(range(0, 80, 4))


def test_ocr_figure_one_colour_scale_a_model_along_the_slider():
    """Each model's panel keeps one scale, centred at zero, at every step of the slider (as its static twin, one
    scale a row): the largest |value| over the checkpoints kept, here an early one; no frame resets it."""
    blocks = ocr_blocks()
    blocks["merged"][500] = blocks["merged"][500] * 100  # the merged model's largest values come early
    fig = interactive.ocr_checkpoint_figure(blocks, np.arange(0, 80, 4), max_frames=5)
    heat = [trace for trace in fig.data if trace.type == "heatmap"]
    kept = [int(f.name) for f in fig.frames]
    for trace, arm in zip(heat, blocks):
        bound = max(np.abs(blocks[arm][s]).max() for s in kept)
        assert trace.zmax == pytest.approx(bound, rel=1e-6) and trace.zmin == -trace.zmax, arm
    assert heat[0].zmax != pytest.approx(heat[1].zmax), "each model has its own scale"
    assert all(t.zmin is None and t.zmax is None for f in fig.frames for t in f.data), "a frame rescales its panel"


def test_ocr_figure_rejects_models_with_different_steps():
    blocks = ocr_blocks()
    del blocks["merged"][100]
    with pytest.raises(ValueError, match="blocks\\['merged'\\]"):
        interactive.ocr_checkpoint_figure(blocks, [0])


def test_attention_figure_dropdown_over_heads_slider_over_steps():
    p = patterns()
    steps = list(range(0, 601, 10))
    fig = interactive.attention_figure(p, steps, torch.arange(49))
    kept = [int(f.name) for f in fig.frames]
    assert kept == list(range(0, 601, 50))
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == [f"L{l}H{h}" for l in range(2) for h in range(4)]
    # entry i shows trace i only; the figure opens on the last head
    for i, b in enumerate(buttons):
        assert b.args[0]["visible"] == [j == i for j in range(8)]
    assert [t.visible for t in fig.data] == [False] * 7 + [True]
    # trace i of a frame is head i's pattern at that step, in whole percents
    frame = frame_named(fig, 300)
    z = np.asarray(frame.data[5].z)  # L1H1
    assert z.dtype == np.uint8
    np.testing.assert_allclose(z, p[steps.index(300), 1, 1].numpy() * 100, atol=0.5 + 1e-6)
    assert not np.array_equal(np.asarray(frame_named(fig, 0).data[5].z), z)


def test_attention_figure_rejects_bad_shapes():
    with pytest.raises(ValueError, match="patterns"):
        interactive.attention_figure(np.zeros((3, 2, 4, 5)), [0, 1, 2])
    with pytest.raises(ValueError, match="steps"):
        interactive.attention_figure(np.zeros((3, 1, 1, 5, 5)), [0, 1])
    with pytest.raises(ValueError, match="tokens"):
        interactive.attention_figure(np.zeros((3, 1, 1, 5, 5)), [0, 1, 2], [0, 1])


def test_ablation_figure_panels_per_kind_dropdown_over_heads():
    v = losses()
    steps = list(range(0, 601, 20))
    fig = interactive.ablation_figure(v, steps, NAMES, period=12)
    n = len(NAMES)
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == [f"remove {x}" for x in NAMES[1:]]
    # entry "remove L1H0" shows the intact line and the L1H0 line in both panels (and the legend of the dashes)
    visible = fig.layout.updatemenus[0].buttons[2].args[0]["visible"]
    shown = [i for i, on in enumerate(visible[: 2 * n]) if on]
    assert shown == [0, 3, n, n + 3] and visible[2 * n :] == [True]
    assert len(fig.frames) == 16
    frame = fig.frames[7]
    k = steps.index(int(frame.name))
    np.testing.assert_allclose(np.asarray(frame.data[n + 3].y), v["pattern-preserving"][k, 3], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(frame.data[0].y), v["full"][k, 0], rtol=1e-6)
    assert {s.x0 for s in fig.layout.shapes} == {13.5}


@pytest.mark.parametrize(
    "build",
    [
        lambda: interactive.ocr_checkpoint_figure(ocr_blocks(), np.arange(0, 80, 4), max_frames=5),
        lambda: interactive.attention_figure(patterns(), list(range(0, 601, 10))),
        lambda: interactive.ablation_figure(losses(), list(range(0, 601, 20)), NAMES, period=12),
    ],
    ids=["ocr", "attention", "ablation"],
)
def test_every_text_is_at_least_ten_points(build):
    """Plotly sizes text in CSS pixels: 10 pt is 13.3 px. Text without a size of its own takes the layout's."""
    fig = build()
    ten_points = 10 * 96 / 72
    assert fig.layout.font.size >= ten_points
    sizes = [fig.layout.title.font.size] + [a.font.size for a in fig.layout.annotations]
    sizes += [s.font.size for s in fig.layout.sliders] + [m.font.size for m in fig.layout.updatemenus]
    assert all(size is None or size >= ten_points for size in sizes), sizes


def test_ablation_figure_rejects_mismatched_names():
    with pytest.raises(ValueError, match="names"):
        interactive.ablation_figure(losses(), list(range(0, 601, 20)), NAMES[:-1])


def test_chapter_sized_figures_embed_well_under_two_megabytes():
    """The data a chapter embeds in its page, at the chapters' sizes (600 KB leaves room under ~2 MB)."""
    sizes = {
        "ocr": interactive.embedded_bytes(interactive.ocr_checkpoint_figure(ocr_blocks(), np.arange(20))),
        "attention": interactive.embedded_bytes(interactive.attention_figure(patterns(), range(0, 601, 10))),
        "ablation": interactive.embedded_bytes(
            interactive.ablation_figure(losses(seq=49, n_names=11), range(0, 601, 20), [*NAMES, *"abcde"])
        ),
    }
    assert all(size < 600_000 for size in sizes.values()), sizes


def test_page_html_draws_with_the_pages_plotly_and_references_no_url():
    fig = interactive.attention_figure(patterns(5, 1, 2, 6), range(5))
    html = interactive.page_html(fig, div_id="fig-1")
    assert f'id="fig-1" class="{interactive.FIGURE_CLASS}"' in html
    assert "Plotly.newPlot" in html and "Plotly.addFrames" in html
    assert "<script src" not in html and not re.search(r"https?://", html)
    assert "</script>" not in html.split("<script>", 1)[1][:-9]  # the JSON cannot end the script early
    spec = re.search(r"var fig = (.*);\n  function draw", html).group(1)
    assert "DOMContentLoaded" in html  # drawn once the page is parsed: plotly.js is loaded deferred
    assert len(json.loads(spec)["frames"]) == 5


def test_show_bundle_outside_and_inside_colab(monkeypatch):
    fig = interactive.attention_figure(patterns(3, 1, 1, 4), range(3))
    with pytest.raises(ValueError, match="fig"):
        interactive.show("not a figure")
    bundle = interactive.show(fig)._repr_mimebundle_()
    assert set(bundle) == {"application/vnd.plotly.v1+json", "text/html", "text/plain"}
    assert len(bundle["application/vnd.plotly.v1+json"]["frames"]) == 3
    monkeypatch.setitem(sys.modules, "google.colab", SimpleNamespace())
    colab = interactive.show(fig)._repr_mimebundle_()
    assert set(colab) == {"text/html", "text/plain"} and "cdn.plot.ly" in colab["text/html"]
    assert "Plotly.addFrames" in colab["text/html"] and "Plotly.animate" not in colab["text/html"]  # no autoplay
