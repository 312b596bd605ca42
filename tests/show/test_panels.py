"""lib.show.panels: a figure's panels are counted as drawn, a caption's count is read as a total, and every figure a
notebook shows records its count in its PNG."""

import io

import matplotlib

matplotlib.use("Agg")

import IPython  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from lib.show import panels  # noqa: E402
from lib.show._common import sharp_notebook_figures  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_panels_with_content_count_and_unused_cells_of_the_grid_do_not():
    fig, axes = plt.subplots(2, 3)
    for ax in axes.flat[:4]:
        ax.plot([0, 1], [1, 0])
    axes[1, 1].axis("off")
    axes[1, 1].imshow([[0, 1]])  # an image without axis lines is still a panel
    axes[1, 2].axis("off")  # a spare cell of the grid, left empty
    assert panels.visible_panels(fig) == 5


def test_colour_bars_twins_and_insets_are_not_panels():
    fig, axes = plt.subplots(1, 2)
    image = axes[0].imshow([[0, 1], [1, 0]])
    fig.colorbar(image, ax=axes[0])
    fig.colorbar(image, cax=axes[1].inset_axes((1.02, 0, 0.05, 1)))
    axes[1].plot([0, 1])
    axes[1].twinx().plot([1, 0])  # a second y-axis over the same panel
    assert panels.visible_panels(fig) == 2


def test_subfigures_panels_count():
    fig = plt.figure()
    left, right = fig.subfigures(1, 2)
    left.subplots(2, 1)
    right.subplots(1, 1)
    assert panels.visible_panels(fig) == 3


@pytest.mark.parametrize(
    ("caption", "total"),
    [
        ("Six panels, two rows of three: the loss (top) and the score (bottom).", 6),
        ("The learned map at four checkpoints (four panels).", 4),
        ("One legend below both panels.", 2),
        ("A run keeps its colour in both panels; 12 panels in all.", None),  # two totals: an error, below
        ("Red is positive, the two panels of a row share one colour scale.", None),
        ("Each model's four panels share one colour scale.", None),
        ("One panel per layer, for seed 0.", None),
        ("Six signatures on one time axis, left the losses, right the scores.", None),
        ("The per-token loss, named in the panel titles.", None),
    ],
)
def test_a_caption_states_a_total_or_nothing(caption, total):
    if "12 panels" in caption:
        with pytest.raises(ValueError, match="state one total"):
            panels.stated_panels(caption)
    else:
        assert panels.stated_panels(caption) == total


def test_a_notebook_figure_records_its_panels_in_its_png(monkeypatch):
    shell = InteractiveShell.instance()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    sharp_notebook_figures()
    fig, axes = plt.subplots(1, 3)
    for ax in axes.flat:
        ax.plot([0, 1])
    png, _ = shell.display_formatter.formatters["image/png"](fig)  # base64, as a notebook stores it
    assert panels.saved_panels(png) == 3
    plain, _ = plt.subplots()
    saved = io.BytesIO()
    plain.savefig(saved, format="png")
    assert panels.saved_panels(saved.getvalue()) is None
