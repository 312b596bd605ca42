"""scripts/build_code_corpus.py, the pinned code corpus of the natural-text GPU runs: what it keeps and how it is pinned
(the build itself downloads about 150 MB and is run by hand; its output's SHA-256 is in the issue note)."""

import re
import sys

from bookfiles import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import build_code_corpus as cc  # noqa: E402


def test_every_package_is_pinned_and_permissive():
    for name, (version, license_id, digest) in cc.PACKAGES.items():
        assert re.fullmatch(r"[0-9][0-9.]*", version), name
        assert license_id in {"MIT", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0"}, (name, license_id)
        assert re.fullmatch(r"[0-9a-f]{64}", digest), f"{name}: no pinned SHA-256"
    assert set(cc.HELD_OUT) <= set(cc.PACKAGES)


def test_keeps_source_not_tests_or_vendored_copies():
    assert cc.kept("numpy/linalg/_linalg.py")
    assert not cc.kept("numpy/linalg/tests/test_linalg.py")
    assert not cc.kept("sympy/core/test_core.py")
    assert not cc.kept("setuptools/_vendor/packaging/version.py")
    assert not cc.kept("numpy/core/_multiarray_umath.cpython-312-x86_64-linux-gnu.so")
    assert cc.is_license("pygments-2.21.0.dist-info/licenses/LICENSE")
    assert not cc.is_license("django/contrib/admin/static/admin/js/vendor/jquery/LICENSE.txt")
