"""A parser for text/plain documents: the first line is the title, http(s) URLs in the text are links."""

from __future__ import annotations

import re

from harvestman.model.records import FetchResult, Link, LinkKind, ParsedPage

_URL = re.compile(r"https?://[^\s<>\"')\]]+")


class PlainTextParser:
    """text/plain: title, text and the URLs written in it (a DocumentParser, crawl/documents.py)."""

    content_types = ("text/plain",)

    def parse(self, result: FetchResult, *, max_links: int, with_text: bool) -> ParsedPage | None:
        """The document's first line as title, its URLs as links (at most `max_links`)."""
        text = result.text if result.text is not None else result.body.decode("utf-8", "replace")
        title = text.strip().split("\n", 1)[0].strip()[:200]
        urls = list(dict.fromkeys(m.rstrip(".,;:") for m in _URL.findall(text)))[:max_links]
        links = tuple(Link(url, LinkKind.DOCUMENT) for url in urls)
        return ParsedPage(title=title, text=text if with_text else "", links=links, base_url=result.final_url)


PARSER = PlainTextParser()
