"""Helpers shared by tests (and benchmarks): loopback sites, sinks that record what they see, a private
PostgreSQL server."""
