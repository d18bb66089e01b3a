"""Sites whose links and text exist only after scripts run, for the browser tests and benchmarks.

`write_render_site(root)` writes one host's pages (nginx serves them): a static index linking every
case; shells filled by an inline script and from a JSON API on the same host; a page whose scripts
call a loopback canary (fetch, an image, a WebSocket, a beacon, an iframe); a script that never
ends; a page that polls forever (never idle); a robots.txt-disallowed API call; blocked kinds.

`auto_cases(n)` makes labelled pages for measuring `--render auto`: static documents (with and
without scripts, short and long, server-rendered apps) and script-built ones (empty mount nodes,
script-built navigation, `<noscript>` fallbacks, content from an API), a few hard cases of each.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

INLINE_MARKER = "INLINE-TEXT-MARKER"
API_MARKER = "API-TEXT-MARKER"
WORDS = ["crawler", "frontier", "politeness", "robots", "sitemap", "render", "browser", "context", "page",
         "script", "link", "text", "archive", "record", "response", "request", "header", "host", "queue",
         "lease", "worker", "parse", "index", "search"]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _page(title: str, body: str, head: str = "") -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>{head}</head>"
            f"<body>{body}</body></html>")


def write_render_site(root: Path, canary: str) -> None:
    """The pages of the browser tests under `root` (one host); `canary` is http://ADDR:PORT of a
    listener on a loopback address the crawl does not allow."""
    root.mkdir(parents=True, exist_ok=True)
    cases = ["inline.html", "api.html", "canary.html", "endless.html", "unsettled.html", "kinds.html",
             "static.html"]
    links = "".join(f'<li><a href="/{name}">{name}</a></li>' for name in cases)
    (root / "index.html").write_text(_page("index", f"<h1>Render tests</h1><ul>{links}</ul>"))
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    (root / "static.html").write_text(_page("static", "<p>A page with no script at all.</p>"
                                            '<a href="/static-target.html">static target</a>'))
    (root / "inline.html").write_text(_page("inline", '<div id="root"></div><script>'
        "var r=document.getElementById('root');"
        # The marker is put together by the script: the HTML as served does not hold it.
        "r.innerHTML='<p>INLINE-'+'TEXT-MARKER</p>"
        "<a href=\"/from-inline-1.html\">one</a> <a href=\"/from-inline-2.html\">two</a>';"
        "</script>"))
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "items.json").write_text(json.dumps(
        {"text": API_MARKER, "links": ["/from-api-1.html", "/from-api-2.html"]}))
    (root / "private").mkdir(exist_ok=True)
    (root / "private" / "secret.json").write_text('{"secret": true}')
    (root / "api.html").write_text(_page("api", '<div id="app"></div><script>'
        "fetch('/private/secret.json').catch(function(){});"
        "fetch('/data/items.json').then(function(r){return r.json()}).then(function(d){"
        "var a=document.getElementById('app');a.innerHTML='<p>'+d.text+'</p>'+"
        "d.links.map(function(l){return '<a href=\"'+l+'\">'+l+'</a>'}).join(' ');});"
        "</script>"))
    (root / "canary.html").write_text(_page("canary", '<div id="root"></div><script>'
        f"fetch('{canary}/fetch').catch(function(){{}});"
        f"fetch('http://localhost:{canary.rsplit(':', 1)[1]}/localhost').catch(function(){{}});"
        f"var i=new Image();i.src='{canary}/image.png';"
        f"try{{var w=new WebSocket('{canary.replace('http', 'ws')}/socket');}}catch(e){{}}"
        f"try{{navigator.sendBeacon('{canary}/beacon','x');}}catch(e){{}}"
        f"var f=document.createElement('iframe');f.src='{canary}/frame';document.body.appendChild(f);"
        "document.getElementById('root').innerHTML='<a href=\"/after-canary.html\">after</a>';"
        "</script>",
        head=f'<link rel="dns-prefetch" href="{canary}"><link rel="preconnect" href="{canary}">'))
    (root / "endless.html").write_text(
        _page("endless", '<div id="root"></div><script>while(true){}</script>'))
    (root / "unsettled.html").write_text(_page("unsettled", '<div id="root"></div><script>'
        "setInterval(function(){fetch('/data/items.json?'+Date.now())},100);</script>"))
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "kinds.html").write_text(_page("kinds", '<div id="root"></div><img src="/img.png"><script>'
        "document.getElementById('root').innerHTML='<a href=\"/after-kinds.html\">k</a>';</script>"))
    # Not linked from the index: a page whose API calls are redirected (nginx: REDIRECTS below), once
    # to the same host's data, once to the canary.
    (root / "redirects.html").write_text(_page("redirects", '<div id="root"></div><script>'
        "fetch('/data/to-canary.json').catch(function(){});"
        "fetch('/data/moved.json').then(function(r){return r.json()}).then(function(d){"
        "document.getElementById('root').innerHTML='<p>'+d.text+'</p>';});</script>"))
    # Not linked from the index: a page 3,000 pixels tall, built by its script (full-page screenshots).
    (root / "tall.html").write_text(_page("tall", '<div id="root"></div><script>'
        "document.getElementById('root').innerHTML='<div style=\"height:3000px\">tall</div>';</script>"))
    for name in ("from-inline-1", "from-inline-2", "from-api-1", "from-api-2", "after-canary",
                 "after-kinds", "static-target"):
        (root / f"{name}.html").write_text(_page(name, f"<p>{name}</p>"))


def redirects(canary: str) -> str:
    """nginx directives for write_render_site's redirected API calls."""
    return (f"location = /data/moved.json {{ return 302 /data/items.json; }}\n"
            f"location = /data/to-canary.json {{ return 302 {canary}/redirected; }}\n")


@dataclass(frozen=True)
class AutoCase:
    """One labelled page for `auto`: its file name, its HTML, and whether scripts build what it shows."""

    name: str
    html: str
    script_built: bool
    kind: str


def _links(rng: random.Random, n: int) -> str:
    return " ".join(f'<a href="/p{rng.randrange(10**6)}.html">{_words(rng, 2)}</a>' for _ in range(n))


def _fill(target: str, rng: random.Random, links: int, words: int) -> str:
    """A script that puts text and links into the element with id `target`."""
    content = f"<p>{_words(rng, words)}</p>" + _links(rng, links).replace('"', '\\"')
    return f"<script>document.getElementById('{target}').innerHTML=\"{content}\";</script>"


def auto_cases(per_kind: int, seed: int = 19) -> list[AutoCase]:
    """`per_kind` pages of each kind, labelled (script_built: what a reader sees is made by scripts)."""
    rng = random.Random(seed)
    cases: list[AutoCase] = []

    def add(kind: str, html: str, built: bool) -> None:
        cases.append(AutoCase(f"{kind}-{len(cases)}.html", html, built, kind))

    for _ in range(per_kind):
        article = f"<h1>{_words(rng, 4)}</h1>" + "".join(
            f"<p>{_words(rng, rng.randint(40, 120))}</p>" for _ in range(rng.randint(3, 8)))
        nav = f"<nav>{_links(rng, rng.randint(4, 12))}</nav>"
        # Static documents: whatever scripts they carry add nothing a reader needs.
        add("static-plain", _page("a", nav + article), False)
        add("static-analytics", _page("a", nav + article + _links(rng, 5),
                                      head="<script async src='/analytics.js'></script>"
                                      "<script>window.dataLayer=[];</script>"), False)
        add("static-short", _page("s", f"<p>{_words(rng, 12)}</p>" + _links(rng, 2)), False)
        add("static-ssr", _page("ssr", f'<div id="root">{nav}{article}</div>'
                                '<script src="/bundle.js"></script><script>window.__STATE__={}</script>'),
            False)
        add("static-noscript-pixel", _page("p", nav + article + '<noscript><img src="/pixel.gif"></noscript>'
                                           "<script>var t=1;</script>"), False)
        # Hard case: a full document with an empty comment-widget mount node.
        add("static-widget", _page("w", nav + article + '<div id="app"></div>'
                                   "<script src='/comments.js'></script>"), False)
        # Script-built pages.
        add("shell-root", _page("r", '<div id="root"></div>' + _fill("root", rng, 8, 60)), True)
        add("shell-app", _page("v", '<div id="app"></div>' + _fill("app", rng, 8, 60)), True)
        add("shell-angular", _page("ng", '<app-root id="ng"></app-root>' + _fill("ng", rng, 6, 50)), True)
        add("shell-nav", _page("n", '<nav id="menu"></nav>' + article + _fill("menu", rng, 8, 2)), True)
        add("shell-noscript", _page("ns", "<noscript>Please enable JavaScript to use this site.</noscript>"
                                    f"<h1>{_words(rng, 3)}</h1><div id='main-view'></div>"
                                    + _fill("main-view", rng, 6, 80)), True)
        add("shell-content", _page("c", f"<header>{_words(rng, 6)}</header><div id='content'></div>"
                                   + _fill("content", rng, 6, 150)), True)
        # Hard case: a long static text whose links a script inserts into a list without a known id.
        add("shell-links-only", _page("l", article + '<ul id="related"></ul>' + _fill("related", rng, 10, 1)),
            True)
    return cases
