"""Helpers the tests (and benchmarks) share: real servers started in temporary folders."""
