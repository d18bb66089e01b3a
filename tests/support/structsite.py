"""A small site whose pages carry structured data (JSON-LD, microdata, RDFa, OpenGraph) and
contact details, for the extract and query tests; served by tests/support/nginx.py."""

from __future__ import annotations

from pathlib import Path

PAGES: dict[str, str] = {
    "index.html": """<!doctype html><html><head><title>Home</title>
<meta property="og:title" content="Home page"><meta property="og:url" content="/">
</head><body><h1>Home</h1>
<a href="/ada.html">Ada</a> <a href="/bob.html">Bob</a> <a href="/widget.html">Widget</a>
<a href="/news.html">News</a> <a href="/event.html">Event</a> <a href="/broken.html">Broken</a>
</body></html>""",
    "ada.html": """<!doctype html><html><head><title>Ada Lovelace</title>
<meta property="og:type" content="profile"><meta property="og:title" content="Ada Lovelace">
<meta property="profile:first_name" content="Ada">
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Person",
 "name": "Ada Lovelace", "jobTitle": "Analyst", "url": "https://example.org/ada",
 "address": {"@type": "PostalAddress", "addressLocality": "London"}, "sameAs": ["a", "b"]}</script>
</head><body><h1>Ada Lovelace</h1><p>Research on analytical engines and compilers.</p>
<p class="contact">Mail: <a href="mailto:ada@example.org">ada@example.org</a></p>
<span class="room">Room 101</span></body></html>""",
    "bob.html": """<!doctype html><html><head><title>Bob</title></head><body>
<div itemscope itemtype="https://schema.org/Person"><span itemprop="name">Bob Builder</span>
<span itemprop="jobTitle">Engineer</span></div>
<p>Bob studies compilers too but gives no address.</p><span class="room">Room 7</span></body></html>""",
    "widget.html": """<!doctype html><html><head><title>Widget</title>
<meta property="og:type" content="product"><meta property="og:title" content="Widget">
<meta property="og:image" content="/w1.png"><meta property="og:image" content="/w2.png">
</head><body>
<div itemscope itemtype="https://schema.org/Product"><span itemprop="name">Widget</span>
<span itemprop="sku">W-1</span>
<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
<span itemprop="price">9.99</span><span itemprop="priceCurrency">EUR</span></div></div>
</body></html>""",
    "news.html": """<!doctype html><html><head><title>News</title>
<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
 {"@type": "Article", "@id": "#a1", "headline": "Compilers today", "datePublished": "2024-05-01"},
 {"@type": ["Organization", "NewsMediaOrganization"], "name": "Daily Bits"}]}</script>
</head><body><p>News about compilers.</p></body></html>""",
    "event.html": """<!doctype html><html><head><title>Event</title></head>
<body vocab="https://schema.org/"><div typeof="Event"><span property="name">Compiler Days</span>
<span property="startDate">2024-06-01</span>
<div property="location" typeof="Place"><span property="name">Hall A</span></div></div>
<p class="contact">Write to <a href="mailto:events@example.org?subject=hi">us</a></p></body></html>""",
    "broken.html": """<!doctype html><html><head><title>Broken</title>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": </script>
<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product",
 "name": "Gadget", "offers": {"@type": "Offer", "price": 5}}</script>
</head><body><p>One broken block, one good.</p></body></html>""",
}


def write_site(root: Path, host: str) -> list[str]:
    """Write the pages under root/host/; returns their paths ("/", "/ada.html", ...)."""
    folder = root / host
    folder.mkdir(parents=True, exist_ok=True)
    for name, html in PAGES.items():
        (folder / name).write_text(html, encoding="utf-8")
    return ["/" if name == "index.html" else f"/{name}" for name in PAGES]


def crawl_site(tmp: Path, host: str) -> tuple[Path, str]:
    """Serve the site with nginx on `host`, crawl it with the CLI; returns (crawl folder, base URL)."""
    from tests.support.crawlcheck import run_cli
    from tests.support.nginx import NginxServer, free_port, require_nginx

    require_nginx()
    port = free_port(host)
    write_site(tmp / "site", host)
    out = tmp / "out"
    base = f"http://{host}:{port}"
    with NginxServer(tmp / "site", [host], port):
        done = run_cli("crawl", base + "/", "--out", str(out), "--allow-net", "127.0.0.0/8", "-q",
                       "--workers", "1")
    assert done.returncode == 0, done.stderr
    return out, base


def write_features(out: Path, base: str, categories: dict[str, str]) -> None:
    """Write DIR/features/pages.parquet as the page-features step does (url, title, text, language,
    category, category_probability), with the given path -> category."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harvestman.index.extract import FetchedPage, parse_page

    rows = []
    for name, html in PAGES.items():
        path = "/" if name == "index.html" else f"/{name}"
        tree = parse_page(FetchedPage(base + path, html.encode(), "text/html"))
        title = tree.findtext(".//title") or ""
        text = " ".join(tree.find(".//body").text_content().split())
        rows.append({"url": base + path, "title": title, "text": text, "language": "en",
                     "category": categories.get(path, "other"), "category_probability": 0.9})
    (out / "features").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "features" / "pages.parquet")
