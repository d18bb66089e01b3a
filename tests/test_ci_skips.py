"""tests/conftest.py: in CI a skip for a missing part fails, naming the part; elsewhere it stays a skip."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INNER = """
import pytest

def test_needs_a_tool():
    pytest.skip("the frobnicator is not installed (apt-get install frobnicator)")

@pytest.mark.skipif(True, reason="libwidget is missing")
def test_marked():
    pass

@pytest.mark.intended_skip
def test_intended():
    pytest.skip("only meaningful on a big-endian machine")

@pytest.mark.xfail(strict=True, reason="a known bug")
def test_known_bug():
    assert False

def test_runs():
    pass
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None) -> pytest.RunResult:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_inner=INNER)
    return pytester.runpytest("-p", "tests.conftest", "-p", "no:cacheprovider", "-rA")


@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_a_missing_part_fails_and_names_it(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                 ci: str) -> None:
    result = _run(pytester, monkeypatch, ci)
    result.assert_outcomes(passed=1, skipped=1, xfailed=1, errors=1, failed=1)
    text = result.stdout.str()
    assert "an install step is broken: the frobnicator is not installed" in text
    assert "an install step is broken: libwidget is missing" in text
    assert "SKIPPED [1] test_inner.py" in text and "big-endian" in text  # the intended skip stays one


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_outside_ci_a_missing_part_is_a_skip(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                             ci: str | None) -> None:
    result = _run(pytester, monkeypatch, ci)
    result.assert_outcomes(passed=1, skipped=3, xfailed=1)


def test_in_ci_a_module_skipped_at_import_fails(pytester: pytest.Pytester,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_mod='import pytest\npytest.importorskip("no_such_module_here")\n'
                                 'def test_x():\n    pass\n')
    result = pytester.runpytest("-p", "tests.conftest", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    assert "no_such_module_here" in result.stdout.str()
