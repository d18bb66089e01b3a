"""Fixtures shared by every test module, and the rule that CI skips nothing it could have run.

A test skips when a real part it needs is missing here (nginx, openssl, atheris, unshare/getent, a
DNS port, pyarrow): on a developer's machine that is fine, it says what to install. In CI (the CI
environment variable set, as `CI=true bash .ci/run` runs) .ci/run installs every such part, so a skip
there means a broken install step and would hide untested code behind a green run: it fails instead,
naming the missing part. A skip that is not about a missing part keeps being one where its test is
marked `@pytest.mark.intended_skip`.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.support.httpserver import route_server  # noqa: F401 (a fixture: pytest finds it here)
from tests.support.postgres import PostgresServer, PostgresUnavailable

# The folder of the PostgreSQL server a pytest-xdist controller started for its workers to share.
SHARED_POSTGRES = "HARVESTMAN_TEST_POSTGRES"
_POSTGRES_KEY = pytest.StashKey[PostgresServer]()


def pytest_configure(config: pytest.Config) -> None:
    """Register the intended_skip marker; as pytest-xdist's controller, start the run's one PostgreSQL
    server, which every worker then shares (its folder in SHARED_POSTGRES, inherited by the workers)."""
    config.addinivalue_line(
        "markers", "intended_skip: a skip not about a missing part, so it stays a skip in CI (conftest.py)")
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        try:
            server = PostgresServer().start()
        except PostgresUnavailable:
            return  # each worker's fixture tries again and skips saying why
        config.stash[_POSTGRES_KEY] = server
        os.environ[SHARED_POSTGRES] = str(server.tmp)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the PostgreSQL server pytest_configure started, after every worker is done with it."""
    server = config.stash.get(_POSTGRES_KEY, None)
    if server is not None:
        os.environ.pop(SHARED_POSTGRES, None)
        server.stop()


def in_ci() -> bool:
    """Whether this run is CI's (CI set to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _failed_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turn a skip report into a failure that says what was missing."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped in CI, where .ci/run installs every part the tests need, so an install "
                       f"step is broken: {reason.removeprefix('Skipped: ')}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    """In CI, a test that skipped (not an xfail, not marked intended_skip) fails instead."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if (report.skipped and in_ci() and not hasattr(report, "wasxfail")
            and item.get_closest_marker("intended_skip") is None):
        _failed_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None]:
    """In CI, a whole module that skips at import (pytest.importorskip at top level) fails instead."""
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if report.skipped and in_ci():
        _failed_skip(report)


@pytest.fixture(scope="session")
def postgres_server() -> Generator[PostgresServer]:
    """One private PostgreSQL server for the whole run (tests/support/postgres.py), or a skip; when
    pytest-xdist spreads the tests over the cores (.ci/run), the one its controller started."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed: pip install 'harvestman[postgres]'")
    shared = os.environ.get(SHARED_POSTGRES)
    if shared:
        yield PostgresServer(folder=Path(shared))
        return
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server."""
    return postgres_server.create_database()
