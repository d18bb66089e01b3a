"""harvestman's links of each page against what a real browser sees (`document.links`).

    python bench/link_recall.py [--docs /usr/share/doc/python3.11/html] [--source crawl|parse]
                                [--normalize href|crawl] [--no-js] [--limit N] [--show 20]

Serves a folder of HTML (Debian's python3.11-doc by default: `apt-get install python3.11-doc`)
through a private nginx on a loopback address, then for every .html file in it:

  browser    Chromium (`apt-get install chromium`; Playwright drives /usr/bin/chromium, no
             `playwright install`) loads the page and reads `[...document.links].map(a => a.href)`,
             http(s) only. Requests to any other address are refused, so nothing leaves the machine.
  harvestman `--source crawl` (the default): one `harvestman crawl` of the site from its
             index.html with default settings, then `harvestman export --what links`; a page's links
             are its rows. Pages the crawl never fetched (no link leads to them) are listed and left
             out. `--source parse`: each page fetched and given to parse_html as the engine calls it
             (default max_outlinks).

document.links holds <a href> and <area href> only, so harvestman's links of kinds `a` and `area`
are compared (its <link rel=next/canonical>, frames and meta refreshes are counted apart). Both
sides are compared as sets after the same normalization: `href` (the default) compares URLs as
serialized by the URL Standard, fragment kept (Chromium's a.href, ada's href); `crawl` applies
harvestman's normalize() (the crawl database's key: fragment dropped, escapes normalized) to both.

Printed: pages compared and pages whose sets are equal; links in each set, recall (browser links
harvestman has) and precision (harvestman links the browser has), over links and per page; then up
to `--show` differing pages with what each side alone has. Exit status 1 when the sets differ.
Run from the repository root with the venv's Python (it needs playwright: pip install playwright).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvestman.crawl.parse import parse_html
from harvestman.fetch.fetcher import Fetcher
from harvestman.fetch.transport import CurlTransport, TransportSettings
from harvestman.model.config import CrawlConfig
from harvestman.model.errors import InvalidUrlError
from harvestman.net.addrguard import AddressGuard
from harvestman.net.urls import normalize
from tests.support.nginx import NginxServer

ADDRESS = "127.77.0.1"
CHROMIUM = "/usr/bin/chromium"
BROWSER_KINDS = frozenset({"a", "area"})  # what document.links holds
LINKS_JS = "() => [...document.links].map(a => a.href).filter(h => /^https?:/i.test(h))"

Links = dict[str, set[str]]  # page URL -> its links


def page_urls(docs: Path, base: str, limit: int) -> list[str]:
    """The URL of every .html file under `docs`, as nginx serves it."""
    files = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.html"))
    return [base + quote(f) for f in files[: limit or None]]


def browser_links(urls: list[str], js: bool) -> Links:
    """Each page's http(s) `document.links` as Chromium sees it after loading the page."""
    from playwright.sync_api import Route, sync_playwright

    def only_loopback(route: Route) -> None:
        if urlsplit(route.request.url).hostname == ADDRESS:
            route.continue_()
        else:
            route.abort()

    out: Links = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
        context = browser.new_context(java_script_enabled=js)
        context.route("**/*", only_loopback)
        page = context.new_page()
        for i, url in enumerate(urls):
            page.goto(url, wait_until="load")
            out[url] = set(page.evaluate(LINKS_JS))
            if (i + 1) % 100 == 0:
                print(f"  browser: {i + 1}/{len(urls)} pages", file=sys.stderr)
        browser.close()
    return out


def parsed_links(urls: list[str]) -> tuple[Links, Counter[str]]:
    """Each page's links as the engine parses them (kinds a/area), and the other kinds counted."""
    cfg = CrawlConfig()

    async def run() -> tuple[Links, Counter[str]]:
        transport = CurlTransport(TransportSettings(user_agent=cfg.user_agent,
                                                    guard=AddressGuard(["127.0.0.0/8"])))
        fetcher = Fetcher(transport, max_redirects=cfg.max_redirects)
        out: Links = {}
        other: Counter[str] = Counter()
        try:
            for url in urls:
                result = await fetcher.fetch(url, headers=(), timeout=30.0, max_size=cfg.max_size)
                page = parse_html(result.text or "", result.final_url, max_links=cfg.max_outlinks,
                                  with_text=False)
                out[url] = {link.url for link in page.links if link.kind.value in BROWSER_KINDS}
                other.update(link.kind.value for link in page.links if link.kind.value not in BROWSER_KINDS)
        finally:
            await transport.aclose()
        return out, other

    return asyncio.run(run())


def crawled_links(seed: str, workdir: Path) -> tuple[Links, Counter[str]]:
    """Each fetched page's links (none: an empty set) from a default `harvestman crawl` of the site
    and its exports."""
    out_dir = workdir / "crawl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cli = [sys.executable, "-m", "harvestman.app.cli"]
    subprocess.run([*cli, "crawl", seed, "--out", str(out_dir), "--allow-net", "127.0.0.0/8", "--quiet"],
                   check=True, env=env)
    export = workdir / "links.jsonl"
    subprocess.run([*cli, "export", str(out_dir), "--what", "links", "--format", "jsonl", "--output",
                    str(export)], check=True, env=env, stdout=subprocess.DEVNULL)
    urls = workdir / "urls.jsonl"
    subprocess.run([*cli, "export", str(out_dir), "--output", str(urls)], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    with urls.open(encoding="utf-8") as records:
        out: Links = {r["url"]: set() for r in map(json.loads, records) if r["state"] == "fetched"}
    other: Counter[str] = Counter()
    with export.open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            if row["kind"] in BROWSER_KINDS:
                out.setdefault(row["from_url"], set()).add(row["to_url"])
            else:
                other[row["kind"]] += 1
    return out, other


def _crawl_key(url: str) -> str:
    try:
        return normalize(url)
    except InvalidUrlError:
        return url  # refused by the crawl (too long, a trap): compared as it is


def compare(browser: Links, harvestman: Links, key: Callable[[str], str], show: int) -> bool:
    """Print recall and precision over links and pages; True when every page's sets are equal."""
    pages = equal = both_total = browser_total = ours_total = 0
    recall_sum = precision_sum = 0.0
    differing: list[tuple[str, set[str], set[str]]] = []
    unreached = []
    for url, seen in browser.items():
        # A crawl keys pages by their normalized URL; the browser by the URL it loaded.
        ours = harvestman.get(url, harvestman.get(_crawl_key(url)))
        if ours is None:
            unreached.append(url)
            continue
        want, got = {key(u) for u in seen}, {key(u) for u in ours}
        both = want & got
        pages += 1
        equal += want == got
        both_total, browser_total, ours_total = both_total + len(both), browser_total + len(want), \
            ours_total + len(got)
        recall_sum += len(both) / len(want) if want else 1.0
        precision_sum += len(both) / len(got) if got else 1.0
        if want != got:
            differing.append((url, want - got, got - want))
    if unreached:
        print(f"pages never fetched by harvestman, left out ({len(unreached)}): {' '.join(unreached)}")
    print(f"pages compared: {pages}, with equal link sets: {equal} ({equal / max(1, pages):.2%})")
    print(f"links: browser {browser_total}, harvestman {ours_total}, both {both_total}")
    print(f"recall:    {both_total / max(1, browser_total):.4%} of links, mean per page "
          f"{recall_sum / max(1, pages):.4%}")
    print(f"precision: {both_total / max(1, ours_total):.4%} of links, mean per page "
          f"{precision_sum / max(1, pages):.4%}")
    for url, missing, extra in differing[:show]:
        print(f"\n{url}: {len(missing)} only in the browser, {len(extra)} only in harvestman")
        for u in _first(missing):
            print(f"  browser only:    {u}")
        for u in _first(extra):
            print(f"  harvestman only: {u}")
    return not differing


def _first(urls: Iterable[str], count: int = 5) -> list[str]:
    return sorted(urls)[:count]


def main() -> int:
    """Serve the docs, read both sides, compare."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html"))
    parser.add_argument("--source", choices=["crawl", "parse"], default="crawl")
    parser.add_argument("--normalize", choices=["href", "crawl"], default="href")
    parser.add_argument("--no-js", action="store_true", help="load pages with JavaScript off")
    parser.add_argument("--limit", type=int, default=0, help="compare only the first N pages")
    parser.add_argument("--show", type=int, default=20, help="differing pages listed")
    args = parser.parse_args()
    docs = args.docs.resolve()
    if not (docs / "index.html").is_file():
        sys.exit(f"{docs}/index.html not found: apt-get install python3.11-doc, or pass --docs")
    with tempfile.TemporaryDirectory(prefix="link-recall-") as tmp:
        root = Path(tmp) / "www"
        root.mkdir()
        (root / ADDRESS).symlink_to(docs)
        with NginxServer(root, [ADDRESS]) as server:
            base = server.url(ADDRESS, "/")
            urls = page_urls(docs, base, args.limit)
            print(f"{len(urls)} pages from {docs}, served at {base}", file=sys.stderr)
            if args.source == "crawl":
                ours, other = crawled_links(base + "index.html", Path(tmp))
            else:
                ours, other = parsed_links(urls)
            seen = browser_links(urls, js=not args.no_js)
    print(f"source: {args.source}; normalization: {args.normalize}; JavaScript "
          f"{'off' if args.no_js else 'on'}; other link kinds harvestman found (not compared): "
          f"{dict(other) or 'none'}")
    key = _crawl_key if args.normalize == "crawl" else str
    return 0 if compare(seen, ours, key, args.show) else 1


if __name__ == "__main__":
    sys.exit(main())
