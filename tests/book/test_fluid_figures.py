"""_ext/fluid_figures.py: an image given a width and a height keeps only the width (its aspect ratio then holds)."""

from bookfiles import load_extension
from docutils import nodes

fluid = load_extension("fluid_figures")


def test_an_image_with_width_and_height_keeps_only_its_width():
    retina = nodes.image(uri="a.png", width="331", height="207")  # a retina PNG's output metadata
    doctree = nodes.section("", nodes.paragraph("", "", retina))
    assert fluid.without_fixed_height(doctree) == 1
    assert retina["width"] == "331" and "height" not in retina


def test_other_images_keep_their_sizes():
    images = [
        nodes.image(uri="b.png", width="100%"),
        nodes.image(uri="c.png", height="120px"),
        nodes.image(uri="d.png", width="40", height="30", scale=50),  # Sphinx scales both
        nodes.image(uri="e.png"),
    ]
    before = [dict(image.attributes) for image in images]
    doctree = nodes.section("", *[nodes.paragraph("", "", image) for image in images])
    assert fluid.without_fixed_height(doctree) == 0
    assert [dict(image.attributes) for image in images] == before
