"""Indexing and search over what a crawl fetched: full-text search, export to search servers."""
