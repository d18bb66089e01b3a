"""Batch jobs and the crawl cycle's steps over a crawl's database (inject, generate, fetch, parse,
updatedb, readdb, and the cycle that runs them)."""
