"""Helpers shared by tests: loopback sites, sinks that record what they see."""
