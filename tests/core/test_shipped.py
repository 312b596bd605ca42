"""lib.core.shipped: shipped JSON results are read; a missing or foreign file gets an error saying what to run."""

import pytest

from lib.core import shipped


def test_reads_a_file_with_the_required_keys(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"a": 1, "b": [2]}')
    assert shipped.load_results(path, ("a",), what="test results", made_by="bench/x.py") == {"a": 1, "b": [2]}


def test_missing_file_says_how_to_make_it(tmp_path):
    with pytest.raises(ValueError, match=r"no test results at .*missing.json: run bench/x.py --json"):
        shipped.load_results(tmp_path / "missing.json", ("a",), what="test results", made_by="bench/x.py --json")


@pytest.mark.parametrize("text", ['{"a": 1}', "[1, 2]"])
def test_a_file_without_the_keys_is_rejected(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"lacks \['b'\]: not a file of bench/x.py"):
        shipped.load_results(path, ("b",), what="test results", made_by="bench/x.py")
