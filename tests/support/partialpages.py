"""Pages for partial-content tests and benchmarks: a head of a chosen size, a body of a chosen size.

    html = head_page(head_bytes=10_000, total_bytes=500_000, links=["/b.html"])
    head_length(html)    # where </head> ends, in bytes
"""

from __future__ import annotations

import random


def head_page(head_bytes: int, total_bytes: int, *, links: tuple[str, ...] = (), seed: int = 0,
              marker: str = "late") -> str:
    """An HTML page whose head (to the end of `</head>`) is `head_bytes` long and whole `total_bytes`;
    the body holds `links` near its top, varied prose, and a `<div class=MARKER>` at its very end."""
    rng = random.Random(seed)
    words = ["harvest", "spider", "silk", "orchard", "ladder", "pear", "plum", "field", "note", "web"]
    start = "<!doctype html><html><head><meta charset=utf-8><title>page</title>"
    start += '<script type="application/ld+json">{"@type":"VideoObject","name":"v"}</script>'
    end = "</head>"
    filler = head_bytes - len(start) - len(end) - len('<meta name=description content="">')
    start += '<meta name=description content="' + "d" * max(0, filler) + '">'
    head = start + end
    body = "<body>" + "".join(f'<a href="{link}">{link}</a>' for link in links)
    closing = f'<div class="{marker}">end</div></body></html>'
    paragraphs = []
    size = len(head) + len(body) + len(closing)
    while size < total_bytes:  # bounded: each paragraph adds bytes
        text = " ".join(rng.choice(words) for _ in range(60))
        paragraph = f"<p>{text}</p>\n"
        paragraphs.append(paragraph)
        size += len(paragraph)
    html = head + body + "".join(paragraphs) + closing
    return html


def head_length(html: str) -> int:
    """Bytes up to and including `</head>`."""
    return len(html.encode("utf-8").split(b"</head>", 1)[0]) + len(b"</head>")
