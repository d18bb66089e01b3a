"""How much of a page's own content the index's main-text extractor keeps, on several site generators.

    apt-get install python3.11-doc postgresql-doc-15 git-doc
    python bench/main_text.py [--pages 150]

For each generator, the truth is the element that holds the page's content as the generator wrote it,
and index/pagetext.page_text's text is compared with it word by word (multisets of lower-cased
words): precision (how much of what it kept is content) and recall (how much of the content it kept),
means over the pages, and the CPU time a page:

- Sphinx (Python's docs): `div.body`;
- DocBook XSL (PostgreSQL's docs): the body less `div.navheader` and `div.navfooter`;
- AsciiDoc (git's docs): `div#content` (and the h1 of `div#header`, the page's title);
- a blog engine: pages built from real text (git's docs, each a post) in three themes' markup, a
  WordPress theme (header, menu, sidebar widgets, comments, footer around `div.entry-content`),
  a Jekyll minima one and a Hugo one; the truth is the post's title and content element.

Each page's words of the definition lists, tables and code blocks are counted too ("dl/table/pre
kept"): the share of those words the extractor kept.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harvestman.index.pagetext import page_text

PYTHON = Path("/usr/share/doc/python3.11/html")
POSTGRES = Path("/usr/share/doc/postgresql-doc-15/html")
GIT = Path("/usr/share/doc/git-doc")
_WORD = re.compile(r"\w+")


def words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def overlap(found: str, truth: str) -> tuple[float, float]:
    got, want = words(found), words(truth)
    common = sum((got & want).values())
    return common / max(1, sum(got.values())), common / max(1, sum(want.values()))


def _text(node: object) -> str:
    return node.text(separator=" ") if node is not None else ""  # type: ignore[attr-defined]


def _structured(node: object) -> str:
    """The words of the definition lists, tables and code blocks inside the truth element (the
    outermost ones: a list nested in a list is counted once)."""
    outer = []
    for found in node.css("dl, table, pre"):  # type: ignore[attr-defined]
        parent = found.parent
        while parent is not None and parent.tag not in ("dl", "table", "pre"):
            parent = parent.parent
        if parent is None:
            outer.append(_text(found))
    return " ".join(outer)


def sphinx(pages: int) -> Iterator[tuple[str, str, str]]:
    for path in sorted(PYTHON.rglob("*.html"))[:pages]:
        html = path.read_text(encoding="utf-8", errors="replace")
        body = LexborHTMLParser(html).css_first("div.body")
        if body is not None:
            yield html, _text(body), _structured(body)


def docbook(pages: int) -> Iterator[tuple[str, str, str]]:
    for path in sorted(POSTGRES.glob("*.html"))[:pages]:
        html = path.read_text(encoding="utf-8", errors="replace")
        tree = LexborHTMLParser(html)
        for node in tree.css("div.navheader, div.navfooter, script, style"):
            node.decompose()
        if tree.body is not None:
            yield html, _text(tree.body), _structured(tree.body)


def _git_pages(pages: int) -> list[tuple[str, str, str]]:
    """(html, title, content html) of git's AsciiDoc pages."""
    found = []
    for path in sorted(GIT.glob("*.html"))[:pages]:
        html = path.read_text(encoding="utf-8", errors="replace")
        tree = LexborHTMLParser(html)
        content, head = tree.css_first("div#content"), tree.css_first("div#header h1")
        if content is not None and head is not None:
            found.append((html, head.text(), content.html or ""))
    return found


def asciidoc(pages: int) -> Iterator[tuple[str, str, str]]:
    for html, title, content in _git_pages(pages):
        tree = LexborHTMLParser(content)
        yield html, title + " " + _text(tree.body), _structured(tree.body)


_MENU = "".join(f"<li><a href='/{w}/'>{w.title()}</a></li>" for w in ("home", "about", "archive", "contact"))
_WIDGETS = ("<section class='widget'><h2 class='widget-title'>Recent Posts</h2><ul><li><a href='/a'>Release"
            " notes for the spring version</a></li><li><a href='/b'>Why we moved our builds</a></li></ul>"
            "</section><section class='widget'><h2 class='widget-title'>Tags</h2><a href='/t/git'>git</a> "
            "<a href='/t/tools'>tools</a> <a href='/t/howto'>howto</a></section>")
_COMMENTS = ("<div id='comments' class='comments-area'><h2 class='comments-title'>2 thoughts on this post"
             "</h2><ol class='comment-list'><li class='comment'>Great write up, thanks for sharing!</li>"
             "<li class='comment'>Bookmarked for later reading.</li></ol><div id='respond'>Leave a Reply"
             " Your email address will not be published. Post Comment</div></div>")


def wordpress(title: str, content: str) -> str:
    return (f"<!doctype html><html><head><title>{title} – My Dev Blog</title></head><body class='post'>"
            "<div id='page' class='site'><a class='skip-link' href='#content'>Skip to content</a>"
            "<header id='masthead' class='site-header'><p class='site-title'>My Dev Blog</p><p class="
            f"'site-description'>Notes on tools</p><nav id='site-navigation'><ul>{_MENU}</ul></nav>"
            "</header><div id='content' class='site-content'><div id='primary' class='content-area'>"
            "<main id='main' class='site-main'><article class='post type-post'><header class='entry-header'>"
            f"<h1 class='entry-title'>{title}</h1><div class='entry-meta'>Posted on March 3, 2024 by admin"
            f"</div></header><div class='entry-content'>{content}</div><footer class='entry-footer'>Posted"
            " in Tools Tagged git, howto</footer></article><nav class='post-navigation'>Previous post "
            f"Next post</nav>{_COMMENTS}</main></div><aside id='secondary' class='widget-area'>{_WIDGETS}"
            "</aside></div><footer id='colophon' class='site-footer'>Proudly powered by WordPress</footer>"
            "</div></body></html>")


def jekyll(title: str, content: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><title>{title} | My Dev Blog</title></head><body>"
            "<header class='site-header' role='banner'><div class='wrapper'><a class='site-title' "
            f"href='/'>My Dev Blog</a><nav class='site-nav'>{_MENU}</nav></div></header>"
            "<main class='page-content' aria-label='Content'><div class='wrapper'><article class='post "
            "h-entry'><header class='post-header'><h1 class='post-title p-name'>"
            f"{title}</h1><p class='post-meta'>Mar 3, 2024</p></header><div class='post-content e-content'>"
            f"{content}</div><a class='u-url' href='/p'></a></article></div></main><footer class='site-"
            "footer h-card'><div class='wrapper'><h2 class='footer-heading'>My Dev Blog</h2><ul class="
            "'contact-list'><li>me@example.com</li></ul><p>Notes on tools, written by me.</p></div>"
            "</footer></body></html>")


def hugo(title: str, content: str) -> str:
    return (f"<!DOCTYPE html><html><head><title>{title} - My Dev Blog</title></head><body><div class="
            f"'container'><div class='sidebar'><h1>My Dev Blog</h1><p class='lead'>Notes on tools</p><ul "
            f"class='sidebar-nav'>{_MENU}</ul><p>&copy; 2024. All rights reserved.</p></div><div "
            f"class='content container'><div class='post'><h1 class='post-title'>{title}</h1><span "
            f"class='post-date'>Sun, Mar 3, 2024</span>{content}</div><h2>Related posts</h2><ul class="
            "'related-posts'><li><a href='/a'>Release notes for the spring version</a></li></ul></div>"
            "</div></body></html>")


def blog(pages: int) -> Iterator[tuple[str, str, str]]:
    themes = (wordpress, jekyll, hugo)
    for n, (_, title, content) in enumerate(_git_pages(pages)):
        tree = LexborHTMLParser(content)
        yield themes[n % 3](title, content), title + " " + _text(tree.body), _structured(tree.body)


GENERATORS: dict[str, tuple[Callable[[int], Iterator[tuple[str, str, str]]], Path]] = {
    "Sphinx (Python, div.body)": (sphinx, PYTHON),
    "DocBook (PostgreSQL, body less nav)": (docbook, POSTGRES),
    "AsciiDoc (git, div#content)": (asciidoc, GIT),
    "blog themes (WordPress/Jekyll/Hugo)": (blog, GIT),
}


def _index_text(html: str) -> str:
    found = page_text(html)
    return f"{found.title} {found.text}"


def _features_text(html: str) -> str:
    from harvestman.index.features import main_text

    return main_text(html)


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "index (pagetext.page_text)": _index_text,
    "features (features.main_text)": _features_text,
}


def measure(name: str, extract: Callable[[str], str], docs: list[tuple[str, str, str]]) -> None:
    """Print an extractor's precision, recall, dl/table/pre words kept and CPU time on the pages."""
    precision = recall = kept = 0.0
    structured = 0
    cpu = 0.0
    extract(docs[0][0])  # imports out of the timing
    for html, truth, inner in docs:
        start = time.process_time()
        text = extract(html)
        cpu += time.process_time() - start
        p, r = overlap(text, truth)
        precision += p
        recall += r
        if words(inner):
            structured += 1
            kept += overlap(text, inner)[1]
    n = len(docs)
    print(f"  {name:32} precision {precision / n:.3f}  recall {recall / n:.3f}  "
          f"dl/table/pre kept {kept / max(1, structured):.3f}  {cpu / n * 1e6:6.0f} µs/page")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=150, help="pages a generator")
    args = parser.parse_args()
    for name, (pages_of, folder) in GENERATORS.items():
        if not folder.is_dir():
            sys.exit(f"{folder} is missing: apt-get install python3.11-doc postgresql-doc-15 git-doc")
        docs = list(pages_of(args.pages))
        print(f"{name}: {len(docs)} pages")
        for extractor, extract in EXTRACTORS.items():
            measure(extractor, extract, docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
