"""A small site of documents other than HTML, for nginx: RSS 2.0, Atom and RSS 1.0 feeds, a PDF, a
broken feed and a broken PDF, an XML document that is no feed, and pages that only they link to."""

from __future__ import annotations

from pathlib import Path

from tests.support.pdfgen import make_pdf


def page(title: str, *links: str) -> str:
    """A small HTML page with `links`."""
    anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    head = f"<!doctype html><html><head><title>{title}</title></head>"
    return f"{head}<body><p>{title}</p>{anchors}</body></html>\n"


def write_doc_site(root: Path, base: str) -> dict[str, str]:
    """Write the site under `root` (nginx's folder for the host at `base`, e.g. http://127.1.40.1:8080);
    the site's paths by role."""
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, str | bytes] = {
        "index.html": page("Home", "/feed.rss", "/feed.atom", "/rdf.xml", "/doc.pdf", "/broken.pdf",
                           "/broken.rss", "/catalog.xml"),
        "feed.rss": f"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>The RSS feed</title><link>{base}/</link>
<item><title>First</title><link>{base}/from-rss-1.html</link></item>
<item><title>Second</title><guid isPermaLink="true">{base}/from-rss-2.html</guid></item>
<item><title>Opaque</title><guid isPermaLink="false">tag:example,2026:3</guid></item>
</channel></rss>
""",
        "feed.atom": f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="{base}/"><title>The Atom feed</title>
<id>urn:x</id><updated>2026-01-01T00:00:00Z</updated>
<entry><title>Atom one</title><id>urn:1</id><updated>2026-01-01T00:00:00Z</updated>
<link rel="alternate" href="from-atom.html"/></entry>
</feed>
""",
        "rdf.xml": f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="{base}/rdf.xml"><title>The RDF feed</title><link>{base}/</link></channel>
<item rdf:about="{base}/from-rdf.html"><title>RDF item</title><link>{base}/from-rdf.html</link></item>
</rdf:RDF>
""",
        "catalog.xml": f"""<?xml version="1.0"?>
<catalog><item><link>{base}/from-xml.html</link></item></catalog>
""",
        "doc.pdf": make_pdf([["A PDF document", "with some text in it"], ["page two"]], title="The PDF title",
                           links=[f"{base}/from-pdf.html", "mailto:someone@example.org"]),
        "broken.pdf": b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> garbage, no xref, no trailer\n",
        "broken.rss": "this is not a feed at all <<< & >>>\n",
    }
    for name in ("from-rss-1", "from-rss-2", "from-atom", "from-rdf", "from-pdf", "from-xml"):
        files[f"{name}.html"] = page(name)
    for name, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (root / name).write_bytes(data)
    return {
        "feed_entries": "/from-rss-1.html /from-rss-2.html /from-atom.html /from-rdf.html",
        "pdf_link": "/from-pdf.html",
        "not_a_feed": "/from-xml.html",
    }
