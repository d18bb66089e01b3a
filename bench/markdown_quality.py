"""Which HTML-to-Markdown conversion index/markdown.py uses, measured on real documentation pages.

Pages: Python's documentation (Debian's python3.11-doc, Sphinx: a navigation bar, a sidebar, a footer;
the content element is `div.body`) and PostgreSQL's (postgresql-doc-15, DocBook: `div.navheader` and
`div.navfooter` around the content, no element marking it). Every candidate gets the whole page and its
URL and returns Markdown. Against the content element:

- words: precision (how much of the Markdown's text is content) and recall (how much of the content
  it kept), link targets and Markdown syntax left out of the count;
- headings: the content's h1-h6 found as Markdown headings (`#` lines) with the same words;
- code: the content's `pre` blocks found as code blocks (fenced or indented), by their first line;
- tables: the content's data tables found as Markdown tables (`|` rows), by their first cell (layout
  tables, whose cells hold tables or lists, as Sphinx's general index, are not counted);
- CPU a page (one core, process time).

    apt-get install -y python3.11-doc postgresql-doc-15
    .venv/bin/pip install markdownify html2text html-to-markdown trafilatura
    .venv/bin/python bench/markdown_quality.py [--pages 120] [--crawl4ai /path/to/venv/bin/python]

crawl4ai (its DefaultMarkdownGenerator, on its own cleaned HTML, without a browser) runs in a venv of
its own, given with --crawl4ai: it pins versions the project's venv must not take
(`python3 -m venv V && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 V/bin/pip install crawl4ai`).

Last run (2026-12, load average ~19 on the 2 cores; CPU is process time), Python / PostgreSQL:

    candidate                         precision recall  headings  code       tables  ms
    harvestman (element + h-t-m)      0.997 0.996  820/823   1042/1042  69/74   4.2   (chosen)
                                      0.999 1.000  360/360   254/267    66/66   1.0
    element + markdownify             0.958 0.980  797/823   1042/1042  74/74   58.6
                                      0.996 0.998  342/360   254/267    66/66   6.5
    element + html2text               0.971 0.974  822/823   1038/1042  72/74   25.7
                                      0.989 0.997  360/360   215/267    1/66    3.2
    html-to-markdown, whole page      0.837 0.998  (as harvestman)                4.4
    markdownify, whole page           0.769 0.982                                 77.1
    html2text, whole page             0.791 0.977                                 34.6
    trafilatura markdown              0.948 0.876  779/823   737/1042   58/74   52.9
                                      0.994 0.936  0/360     91/267     66/66   9.1
    resiliparse main content (text)   0.999 0.807  0/823     168/1042   -       2.9
    crawl4ai raw_markdown             0.791 0.977  819/823   1042/1042  73/74   44.8
                                      0.908 0.997  360/360   220/267    66/66   6.0
    crawl4ai fit_markdown (pruning)   0.828 0.918  804/823   898/1042   73/74   288.9
                                      0.936 0.988  360/360   220/267    66/66   28.1
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from harvestman.index.markdown import content_element, page_markdown

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
POSTGRES_DOCS = Path("/usr/share/doc/postgresql-doc-15/html")
_WORD = re.compile(r"\w+")
_LINK_TARGET = re.compile(  # inline and reference link targets, autolinks, bare URLs
    r"\]\([^)]*\)|\]\[[^\]]*\]|^\s*\[[^\]]+\]:\s*\S+.*$|<https?://[^>]*>|https?://\S+", re.M)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.M)
_QUOTE = re.compile(r"^[ \t]*(?:>(?:[ \t]|$))+", re.M)  # "> " quote marks, not a ">>>" prompt
_FENCED = re.compile(r"^\s*(```|~~~)[^\n]*\n(.*?)^\s*\1", re.M | re.S)


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def _key(text: str) -> str:
    return " ".join(w.lower() for w in _WORD.findall(_LINK_TARGET.sub("]", text)))


def _code_regions(markdown: str) -> list[str]:
    markdown = _QUOTE.sub("", markdown)  # code in a quote or a list item is code too
    regions = [m.group(2) for m in _FENCED.finditer(markdown)]
    indented: list[str] = []  # indented code blocks (html2text's, markdownify's without fences)
    for line in _FENCED.sub("", markdown).splitlines():
        if line.startswith("    ") or line.startswith("\t"):
            indented.append(line.strip())
        elif line.strip() and indented:
            regions.append("\n".join(indented))
            indented = []
    if indented:
        regions.append("\n".join(indented))
    return regions


def score(markdown: str, truth: Any) -> dict[str, float]:
    """Word precision and recall, and headings, code blocks and tables kept (found, of how many)."""
    got, want = _words(_LINK_TARGET.sub("]", markdown)), _words(truth.text(separator=" "))
    common = sum((got & want).values())
    headings_out = {_key(h) for h in _HEADING.findall(markdown)}
    headings = [_key(h.text(separator=" ").replace("¶", "")) for h in truth.css("h1, h2, h3, h4, h5, h6")]
    headings = [h for h in headings if h]
    regions = _code_regions(markdown)
    code_found = code_all = 0
    for pre in truth.css("pre"):
        first = next((line.strip() for line in pre.text().splitlines() if line.strip()), "")
        if first:
            code_all += 1
            code_found += any(first in region for region in regions)
    # Table rows: GFM's, with or without the outer pipes (html2text leaves them out).
    pipe_lines = [_key(line) for line in markdown.splitlines()
                  if line.lstrip().startswith("|") or " | " in line]
    table_found = table_all = 0
    for table in truth.css("table"):
        if len(table.css("table")) > 1 or table.css_first("td ul, td ol, td dl, th ul, th dl"):
            continue  # a layout table (around others, or cells holding lists: Sphinx's genindex)
        cell = table.css_first("td, th")
        first = _key(cell.text(separator=" ")) if cell is not None else ""
        if first:
            table_all += 1
            table_found += any(first in line for line in pipe_lines)
    return {"precision": common / max(1, sum(got.values())), "recall": common / max(1, sum(want.values())),
            "headings": sum(h in headings_out for h in headings), "headings_all": len(headings),
            "code": code_found, "code_all": code_all, "tables": table_found, "tables_all": table_all}


# ----- the candidates: whole page + URL -> Markdown ------------------------------------------------


def _content_html(html: str) -> str:
    """The content element as index/markdown.py picks it (for converters that have no picker)."""
    main = content_element(LexborHTMLParser(html))
    return (main.html or "") if main is not None else ""


def _markdownify(html: str, url: str) -> str:
    from markdownify import markdownify

    return str(markdownify(html, heading_style="ATX", code_language="", strip=["script", "style"]))


def _html2text(html: str, url: str) -> str:
    import html2text

    h = html2text.HTML2Text(baseurl=url)
    h.body_width = 0
    h.mark_code = False
    return str(h.handle(html))


def _html_to_markdown(html: str, url: str) -> str:
    from html_to_markdown import ConversionOptions, convert

    return str(convert(html, ConversionOptions(base_url=url, extract_metadata=False)).content)


def _trafilatura(html: str, url: str) -> str:
    import trafilatura

    return trafilatura.extract(html, url=url, output_format="markdown", include_tables=True,
                               include_links=True, include_formatting=True) or ""


def _resiliparse(html: str, url: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return str(extract_plain_text(html, main_content=True))


CANDIDATES: dict[str, Callable[[str, str], str]] = {
    "harvestman (content element + html-to-markdown)": page_markdown,
    "content element + markdownify": lambda html, url: _markdownify(_content_html(html), url),
    "content element + html2text": lambda html, url: _html2text(_content_html(html), url),
    "html-to-markdown, whole page": _html_to_markdown,
    "markdownify, whole page": _markdownify,
    "html2text, whole page": _html2text,
    "trafilatura markdown": _trafilatura,
    "resiliparse main content (plain text)": _resiliparse,
}

CRAWL4AI_SCRIPT = r"""
import json, re, sys, time
from crawl4ai.content_filter_strategy import PruningContentFilter
from crawl4ai.content_scraping_strategy import LXMLWebScrapingStrategy
from crawl4ai.markdown_generation_strategy import DefaultMarkdownGenerator
scraper = LXMLWebScrapingStrategy()
plain, pruned = DefaultMarkdownGenerator(), DefaultMarkdownGenerator(content_filter=PruningContentFilter())
out = {"raw": [], "fit": []}
for item in json.load(sys.stdin):
    # Its lxml scraper refuses a str with an XML declaration (DocBook's XHTML); a browser's DOM has none.
    item["html"] = re.sub(r"^\s*<\?xml[^>]*\?>", "", item["html"])
    for name, generator in (("raw", plain), ("fit", pruned)):
        start = time.process_time()
        scraped = scraper.scrap(item["url"], item["html"])
        result = generator.generate_markdown(input_html=scraped.cleaned_html, base_url=item["url"])
        markdown = result.raw_markdown if name == "raw" else result.fit_markdown
        out[name].append({"markdown": markdown, "cpu": time.process_time() - start})
json.dump(out, sys.stdout)
"""
CRAWL4AI_ROWS = {"raw": "crawl4ai raw_markdown (scraper + DefaultMarkdownGenerator)",
                 "fit": "crawl4ai fit_markdown (+ PruningContentFilter)"}


Outputs = dict[str, tuple[list[str], list[float]]]  # row -> (Markdown, CPU seconds) of each page


def _crawl4ai(python: str, docs: list[tuple[str, str, Any]]) -> Outputs | str:
    """crawl4ai's Markdown of each page, by row (raw, fit), and its CPU; or why it could not run."""
    items = [{"html": html, "url": url} for html, url, _ in docs]
    with tempfile.TemporaryFile("w+") as feed:
        json.dump(items, feed)
        feed.seek(0)
        done = subprocess.run([python, "-c", CRAWL4AI_SCRIPT], stdin=feed, capture_output=True, text=True,
                              check=False)
    if done.returncode:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    found = json.loads(done.stdout)
    return {name: ([f["markdown"] for f in rows], [f["cpu"] for f in rows]) for name, rows in found.items()}


# ----- the pages ------------------------------------------------------------------------------------


def _spread(files: list[Path], pages: int) -> list[Path]:
    step = max(1, len(files) // pages)
    return files[::step][:pages]


def python_pages(pages: int) -> list[tuple[str, str, Any]]:
    docs = []
    for path in _spread(sorted(PYTHON_DOCS.rglob("*.html")), pages * 2):
        html = path.read_text(encoding="utf-8", errors="replace")
        truth = LexborHTMLParser(html).css_first("div.body")
        if truth is not None and len(truth.text()) > 200:
            docs.append((html, f"https://docs.python.org/3.11/{path.relative_to(PYTHON_DOCS)}", truth))
    return docs[:pages]


def postgres_pages(pages: int) -> list[tuple[str, str, Any]]:
    docs = []
    for path in _spread(sorted(POSTGRES_DOCS.glob("*.html")), pages * 2):
        html = path.read_text(encoding="utf-8", errors="replace")
        tree = LexborHTMLParser(html)
        for chrome in tree.css("div.navheader, div.navfooter, script, style"):
            chrome.decompose()
        truth = tree.body
        if truth is not None and len(truth.text()) > 200:
            docs.append((html, f"https://www.postgresql.org/docs/15/{path.name}", truth))
    return docs[:pages]


def measure(name: str, docs: list[tuple[str, str, Any]], outputs: list[str], cpu: list[float]) -> str:
    scores = [score(md, truth) for md, (_, _, truth) in zip(outputs, docs, strict=True)]

    def kept(key: str) -> str:
        return f"{sum(s[key] for s in scores)}/{sum(s[key + '_all'] for s in scores)}"

    return (f"| {name} | {statistics.mean(s['precision'] for s in scores):.3f} | "
            f"{statistics.mean(s['recall'] for s in scores):.3f} | {kept('headings')} | {kept('code')} | "
            f"{kept('tables')} | {statistics.median(cpu) * 1000:.1f} |")


def record_cost(docs: list[tuple[str, str, Any]]) -> str:
    """The CPU of what `--markdown` and the export do a page beyond the conversion: the page record
    (title, language) and its chunks of 2000 characters."""
    from harvestman.index.markdown import Provenance, markdown_page, page_chunks

    where = Provenance("<urn:uuid:0>", "warc/x.warc.gz", 0, "2026-01-01T00:00:00.000000Z")
    cpu = []
    for html, url, _ in docs:
        start = time.process_time()
        page_chunks(markdown_page(html, url, where))
        cpu.append(time.process_time() - start)
    return f"a page's whole record (Markdown, title, language, chunks): {statistics.median(cpu) * 1e3:.1f} ms"


def run(site: str, docs: list[tuple[str, str, Any]], crawl4ai: str) -> None:
    print(f"\n{site}: {len(docs)} pages")
    print("| candidate | word precision | word recall | headings | code blocks | tables "
          "| CPU ms a page (median) |")
    print("|---|---|---|---|---|---|---|")
    for name, convert in CANDIDATES.items():
        outputs, cpu = [], []
        for html, url, _ in docs:
            start = time.process_time()
            outputs.append(convert(html, url))
            cpu.append(time.process_time() - start)
        print(measure(name, docs, outputs, cpu), flush=True)
    if crawl4ai:
        found = _crawl4ai(crawl4ai, docs)
        if isinstance(found, str):
            print(f"| crawl4ai | could not run: {found} |")
        else:
            for name, (outputs, cpu) in found.items():
                print(measure(CRAWL4AI_ROWS[name], docs, outputs, cpu))
    else:
        print("| crawl4ai | not run (give --crawl4ai PYTHON of a venv where it is installed) |")
    print(record_cost(docs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=120, help="pages of each documentation set")
    parser.add_argument("--crawl4ai", default="", metavar="PYTHON", help="a python with crawl4ai installed")
    args = parser.parse_args()
    for folder in (PYTHON_DOCS, POSTGRES_DOCS):
        if not folder.is_dir():
            sys.exit(f"{folder} is missing: apt-get install -y python3.11-doc postgresql-doc-15")
    run("Python 3.11 documentation (Sphinx; truth: div.body)", python_pages(args.pages), args.crawl4ai)
    run("PostgreSQL 15 documentation (DocBook; truth: body without navheader/navfooter)",
        postgres_pages(args.pages), args.crawl4ai)


if __name__ == "__main__":
    main()
