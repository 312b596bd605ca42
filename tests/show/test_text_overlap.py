"""lib.show.text_overlap: overlapping text is found where it is drawn, and only there."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from lib.show import text_overlap  # noqa: E402


@pytest.fixture
def fig():
    figure, _ = plt.subplots(figsize=(4, 3), dpi=100)
    yield figure
    plt.close(figure)


def test_text_drawn_over_text_is_found(fig):
    fig.text(0.5, 0.5, "label one", fontsize=12)
    fig.text(0.52, 0.5, "label two", fontsize=12)
    assert text_overlap.overlapping_texts(fig) == [("label one", "label two")]


def test_separate_texts_and_stacked_lines_are_not(fig):
    fig.text(0.1, 0.5, "left", fontsize=12)
    fig.text(0.7, 0.5, "right", fontsize=12)
    fig.text(0.1, 0.8, "gypsy", fontsize=12)  # descenders above the next line's ascenders, as in a legend
    fig.text(0.1, 0.8 - 18 / 300, "Type", fontsize=12)  # 18 px lower: matplotlib spaces 12-pt lines 20 px
    assert text_overlap.overlapping_texts(fig) == []


def test_rotated_labels_count_as_drawn_not_as_their_upright_box(fig):
    # two labels at 45 degrees, side by side: their upright boxes overlap, the rotated text does not
    fig.text(0.3, 0.3, "a long rotated label", rotation=45, fontsize=10)
    fig.text(0.36, 0.3, "a long rotated label", rotation=45, fontsize=10)
    (a, b) = [t for t in fig.texts]
    renderer = fig.canvas.get_renderer()
    assert a.get_window_extent(renderer).overlaps(b.get_window_extent(renderer))
    assert text_overlap.overlapping_texts(fig) == []
    fig.text(0.31, 0.31, "on top of it", rotation=45, fontsize=10)
    assert len(text_overlap.overlapping_texts(fig)) == 1


def test_crowded_tick_labels_are_found_and_hidden_ones_ignored(fig):
    ax = fig.axes[0]
    ax.set_xticks(range(40), [f"label {i}" for i in range(40)])
    assert text_overlap.overlapping_texts(fig)
    ax.set_xticks(range(0, 40, 10), [f"label {i}" for i in range(0, 40, 10)])
    ax.set_xlim(0, 39)
    ax.set_title("")  # empty texts are never drawn
    assert text_overlap.overlapping_texts(fig) == []


def test_report_only_when_switched_on(fig, monkeypatch, capsys):
    fig.text(0.5, 0.5, "same place", fontsize=12)
    fig.text(0.5, 0.5, "same place", fontsize=12)
    monkeypatch.delenv(text_overlap.CHECK_ENV, raising=False)
    text_overlap.report_overlaps(fig)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(text_overlap.CHECK_ENV, "1")
    text_overlap.report_overlaps(fig)
    assert capsys.readouterr().err.startswith(text_overlap.MARK + " 1 pairs")


def test_label_points_skips_labels_that_would_overlap(fig):
    from lib.show._common import label_points

    ax = fig.axes[0]
    ax.plot([0, 0.5, 0.51, 2], [0, 1, 1.0, 2], marker="o")
    written = label_points(ax, [0, 0.5, 0.51, 2], [0, 1, 1.0, 2], ["a", "b", "c", "d"])
    assert written == 3  # "c" would sit on "b"
    assert text_overlap.overlapping_texts(fig) == []
