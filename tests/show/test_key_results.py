"""lib.show.key_results: a record returns the text it glues, in myst-nb's format, and bad names or specs are named."""

import pytest

from lib.show import key_results


def test_record_returns_the_formatted_text_outside_ipython():
    assert key_results.record("ch5-window", 110, "d") == "110"
    assert key_results.record("ch2-held-out-share", 0.925, ".0%") == "92%"
    assert key_results.record("ch3-rank", "4") == "4"


def test_the_output_is_myst_nb_glue_that_jupyter_does_not_show():
    from myst_nb.ext.glue import GLUE_PREFIX, extract_glue_data_cell
    from nbformat.v4 import new_code_cell, new_output

    data, metadata = key_results.glue_output("ch5-window", "110")
    assert key_results.GLUE_PREFIX == GLUE_PREFIX
    assert all(not mime.startswith("text/") for mime in data)  # no mime type a frontend would draw
    cell = new_code_cell(outputs=[new_output("display_data", data=data, metadata=metadata)])
    [(name, output)] = extract_glue_data_cell(cell)
    assert (name, output["data"]) == ("ch5-window", {"text/plain": "'110'"})
    assert cell.outputs == []  # the book does not show it where it was recorded


@pytest.mark.parametrize("text", ["6,000", "0.50", "+0.54", "1,700-2,200", "92%", "-0.356", "it's"])
def test_the_book_pastes_the_text_as_recorded(text):
    from myst_nb.core.variables import format_plain_text

    data, _ = key_results.glue_output("ch1-a", text)
    assert format_plain_text(data[key_results.GLUE_PREFIX + "text/plain"], "") == text


def test_record_displays_in_ipython(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda data, **kw: shown.append((data, kw)))
    assert key_results.record("ch7-cut", 0.5, ".2f") == "0.50"
    [(data, kw)] = shown
    assert data == {key_results.GLUE_PREFIX + "text/plain": "'0.50'"} and kw["raw"] is True
    assert kw["metadata"]["scrapbook"]["name"] == "ch7-cut"


@pytest.mark.parametrize("name", ["window", "ch0-window", "ch5_window", "ch5-Window", "ch5-", "", None])
def test_bad_names_raise(name):
    with pytest.raises(ValueError, match="'ch' and its chapter"):
        key_results.record(name, 1)


def test_a_spec_that_cannot_format_the_value_raises():
    with pytest.raises(ValueError, match="cannot format 'x' with spec '.2f' for key result 'ch1-a'"):
        key_results.record("ch1-a", "x", ".2f")
