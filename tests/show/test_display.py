"""lib.show.display: one Markdown row per mapping, cells escaped, bad input named; show_table displays it."""

import pytest

from lib.show import display


def test_header_separator_and_rows():
    rows = [{"rule": "a -> b", "rank": 0.5}, {"rule": "c -> d", "rank": 1}]
    assert display.markdown_table(rows) == "| rule | rank |\n|---|---|\n| a -> b | 0.5 |\n| c -> d | 1 |"


def test_pipes_and_line_breaks_stay_inside_a_cell():
    assert display.markdown_table([{"a": 1, "b": "x|y"}]) == "| a | b |\n|---|---|\n| 1 | x\\|y |"
    assert display.markdown_table([{"q": "Q: who?\nA:"}]).splitlines()[-1] == "| Q: who? A: |"


def test_columns_follow_the_first_row():
    assert display.markdown_table([{"a": 1, "b": 2}, {"b": 4, "a": 3}]).splitlines()[-1] == "| 3 | 4 |"


def test_bad_rows_raise():
    with pytest.raises(ValueError, match="no rows"):
        display.markdown_table([])
    with pytest.raises(ValueError, match=r"row 1 has keys \['a'\], the first row has \['a', 'b'\]"):
        display.markdown_table([{"a": 1, "b": 2}, {"a": 3}])


def test_show_table_displays_the_markdown(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    display.show_table([{"a": 1}])
    assert len(shown) == 1 and shown[0].data == display.markdown_table([{"a": 1}])
