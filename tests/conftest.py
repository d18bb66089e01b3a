"""Fixtures shared by every test module."""

from tests.httpserver import route_server  # noqa: F401 (a fixture: pytest finds it here)
