"""Unit tests of the display helpers chapters use to print results."""

import pytest

from lib.ocr import markdown_table


def test_markdown_table():
    assert markdown_table([{"a": 1, "b": "x|y"}]) == "| a | b |\n|---|---|\n| 1 | x\\|y |"
    with pytest.raises(ValueError):
        markdown_table([])
