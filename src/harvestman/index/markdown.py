"""A crawled page as Markdown with provenance, and the Markdown cut into chunks for retrieval.

`page_markdown(html: str, url: str) -> str` is the whole conversion for callers that only want the
Markdown of one page (a Firecrawl-shaped API response, say): the page's main content (headings,
lists, tables, code blocks, links and images with absolute URLs), no title block, no metadata.
`markdown_page(html, url, place)` adds the title, the language and where the response is stored;
`chunk_markdown(markdown, size)` cuts it into chunks of at most `size` characters (characters, not
tokens: no tokenizer to choose or ship; ~4 characters make a token of English for most of them).

Chosen by measuring on 120 pages of Python's Sphinx documentation and 120 of PostgreSQL's DocBook
documentation (bench/markdown_quality.py; word precision / recall against the content element, its
headings, code blocks and data tables kept, CPU a page, Python / PostgreSQL):

- the main content is the element the page marks as its own (`main`, `[role=main]`, `article`), else
  the body without its navigation, banners, sidebars and footers (by element, ARIA role and class/id
  names); then html-to-markdown (a Rust converter) writes the Markdown: 0.997 / 0.996, headings
  820/823, code 1042/1042, tables 69/74 (it writes a few two-column tables without a header row as
  lists), 4.2 ms / 0.999 / 1.000, 360/360, 254/267 (the rest: `pre` in table cells), 66/66, 1.0 ms;
- the same element through markdownify: 0.958 / 0.980, 797/823 headings, 58.6 ms; through html2text:
  0.971 / 0.974, 25.7 ms, and PostgreSQL's tables lost (1/66); each of the three on the whole page
  keeps the chrome (precision 0.77-0.84);
- trafilatura's own Markdown: 0.948 / 0.876, code 737/1042, 52.9 ms, no headings on PostgreSQL's pages;
- crawl4ai without a browser (its lxml scraper and DefaultMarkdownGenerator): raw 0.791 / 0.977,
  44.8 ms; fit_markdown (PruningContentFilter) 0.828 / 0.918, code 898/1042, 289 ms;
- Resiliparse's main content (the features' text): 0.999 / 0.807 but plain text, no structure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

from harvestman.model.pagetree import MAX_HTML, PageTree, parse_tree

DEFAULT_CHUNK_SIZE = 2_000  # characters a chunk (~500 tokens of English text)
MAX_TITLE = 1_000
_INVISIBLE = ["script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas"]
# Where a page says its own content is (HTML5 main, ARIA main, an article): taken whole when found.
_MAIN = ("main", "[role=main]", "article")
# Else the body without what repeats on every page of a site.
_CHROME = ("nav, header, footer, aside, form, [role=navigation], [role=banner], [role=contentinfo], "
           "[role=search], [role=complementary], [hidden], [aria-hidden=true]")
# Class and id names of page furniture (Bootstrap, DocBook's navheader/navfooter, WordPress, Sphinx).
_CHROME_NAME = re.compile(r"(?:^|[\s_-])(?:nav\w*|\w*navbar|menu|sidebar|sidebarwrapper|footer|"
                          r"header|breadcrumbs?|cookies?|banner|related|skip-?link)(?:$|[\s_-])", re.I)
_PERMALINK = frozenset({"", "¶", "#", "§", "🔗", "link"})  # a heading's self-link: not its text
_HEADINGS = "h1, h2, h3, h4, h5, h6"
_HIGHLIGHT = re.compile(r"\bhighlight-([\w+-]+)")  # Sphinx's language class, on the div around a pre


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a page's response is stored: enough to read the record again (store/warc_read.py's
    read_response(DIR / warc_file, offset)) and to cite it."""

    record_id: str  # the response record's WARC-Record-ID
    warc_file: str  # the WARC file, relative to the crawl folder, as named once finished
    offset: int  # of the response record's gzip member in that file
    fetch_time: str  # its WARC-Date: when the fetch started (ISO 8601, UTC)


@dataclass(frozen=True, slots=True)
class MarkdownPage:
    """One page's main content as Markdown, with its title, language and provenance."""

    url: str  # the URL answered (after redirects: the WARC record's target)
    title: str
    language: str  # ISO 639-1 ('' when the page has too little text and declares none)
    markdown: str
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a page's Markdown, whole blocks, under the headings it sits beneath."""

    index: int  # 0, 1, ... in the page
    heading_path: tuple[str, ...]  # the headings above its first block, outermost first
    text: str


@dataclass(frozen=True, slots=True)
class MarkdownChunk:
    """A chunk of a page with the page's URL, title and provenance, as exported."""

    url: str
    title: str
    chunk: Chunk
    provenance: Provenance


# ----- HTML to Markdown ---------------------------------------------------------------------------


def _collapse(text: str, limit: int) -> str:
    return " ".join(text[: limit * 4].split())[:limit]


def _is_chrome(node: Any) -> bool:
    attrs = node.attributes
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
    return bool(_CHROME_NAME.search(names))


def content_element(tree: LexborHTMLParser) -> Any:
    """The element holding the page's own content (see the module's docstring); None for a page
    without a body. Strips the tree of what is never content."""
    tree.strip_tags(_INVISIBLE)
    for selector in _MAIN:
        found = tree.css_first(selector)
        if found is not None and found.text(strip=True):
            return found
    body = tree.body if tree.body is not None else tree.root
    if body is None:
        return None
    for node in body.css(_CHROME):
        node.decompose()
    for node in body.css("div, section, ul, table, p, span"):
        if _is_chrome(node):
            node.decompose()
    return body


def _tidy(main: Any) -> None:
    """Mend what converts badly: headings' permalinks, code blocks' languages named on a wrapper."""
    for link in main.css("h1 a, h2 a, h3 a, h4 a, h5 a, h6 a"):
        if link.text(strip=True) in _PERMALINK:
            link.decompose()
    for pre in main.css("pre"):
        parent = pre.parent
        while parent is not None and parent.tag == "div":
            found = _HIGHLIGHT.search(parent.attributes.get("class") or "")
            if found:
                if not (pre.attributes.get("class") or ""):
                    pre.attrs["class"] = f"language-{found.group(1)}"
                break
            parent = parent.parent


def base_url(tree: LexborHTMLParser, url: str) -> str:
    """The URL the page's relative links resolve against: its `<base href>`, else its own."""
    base = tree.css_first("base[href]")
    href = (base.attributes.get("href") or "").strip() if base is not None else ""
    return urljoin(url, href) if href else url


def _converted(html: str, base: str, *, whole: bool = False) -> str:
    from html_to_markdown import ConversionOptions, PreprocessingOptions, convert  # Markdown is opt-in

    # `whole`: the converter's own removal of navigation and forms is off too.
    cleaning = PreprocessingOptions(remove_navigation=False, remove_forms=False) if whole else None
    options = ConversionOptions(base_url=base, extract_metadata=False, heading_style="atx",
                                code_block_style="backticks", inline_data_media="alt_text_only",
                                autolinks=False, preprocessing=cleaning)
    return str(convert(html, options).content).strip() + "\n"


def _markdown_of(tree: LexborHTMLParser, url: str, *, main_only: bool = True) -> str:
    base = base_url(tree, url)
    if main_only:
        main = content_element(tree)
    else:  # the whole body, navigation and footers included; scripts and styles are never content
        tree.strip_tags(_INVISIBLE)
        main = tree.body if tree.body is not None else tree.root
    if main is None:
        return ""
    _tidy(main)
    markdown = _converted(main.html or "", base, whole=not main_only)
    return "" if not markdown.strip() else markdown


def page_markdown(html: str, url: str, *, main_only: bool = True) -> str:
    """The Markdown of one page's main content (of its whole body without `main_only`), relative
    links resolved against `url` (and the page's `<base href>`); '' for a page with no content."""
    return _markdown_of(parse_tree(html[:MAX_HTML]), url, main_only=main_only)


def _title(tree: LexborHTMLParser) -> str:
    node = tree.css_first("title")
    title = _collapse(node.text(deep=True), MAX_TITLE) if node is not None else ""
    if not title:
        heading = tree.css_first("h1")
        title = _collapse(heading.text(deep=True), MAX_TITLE) if heading is not None else ""
    return title


_SYNTAX = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|[`*_#>|]+|^-{3,}$", re.M)


def plain_text(markdown: str) -> str:
    """The words of a Markdown text, without its link targets and syntax (what the language is told
    from)."""
    return _SYNTAX.sub(lambda m: m.group(1) or " ", markdown)


def markdown_page(html: str, url: str, provenance: Provenance, tree: PageTree | None = None) -> MarkdownPage:
    """One page's Markdown record: its main content as Markdown, title, language and provenance;
    `tree`: the page's shared tree, if it has one (the Markdown is made on a copy of it)."""
    from harvestman.index.features import LANGUAGE_SAMPLE, detect_language

    dom = parse_tree(html[:MAX_HTML]) if tree is None else tree.copy()  # _markdown_of changes it
    title, root = _title(dom), dom.root
    declared = (root.attributes.get("lang") or "") if root is not None else ""
    markdown = _markdown_of(dom, url)
    language = detect_language(plain_text(markdown[: LANGUAGE_SAMPLE * 2]), declared)  # its sample only
    return MarkdownPage(url, title, language, markdown, provenance)


# ----- chunks -------------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
# A code fence, also inside a list item or a quote (Sphinx's indented blocks come out as quotes).
_FENCE = re.compile(r"^[ \t]*(?:>[ \t])*(`{3,}|~{3,})")
_PREFIX = re.compile(r"^[ \t]*(?:>(?:[ \t]|$))*")  # "> " quote marks, not a ">>>" prompt


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a Markdown text: what a chunk never cuts unless it alone is too large."""

    kind: str  # heading, code, table, text
    text: str
    level: int = 0  # a heading's


def blocks(markdown: str) -> Iterator[Block]:
    """The Markdown's blocks in order: headings, fenced code blocks and tables whole, and the
    paragraphs (lists, quotes) between blank lines."""
    lines = markdown.splitlines()
    i, n = 0, len(lines)
    para: list[str] = []

    def flush() -> Iterator[Block]:
        if para:
            yield Block("text", "\n".join(para))
            para.clear()

    while i < n:
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            yield from flush()
            mark, start = fence.group(1), i
            i += 1
            while i < n and not _PREFIX.sub("", lines[i], count=1).startswith(mark):
                i += 1
            i = min(i, n - 1) + 1  # past the closing fence (an unclosed block runs to the end)
            yield Block("code", "\n".join(lines[start:i]))
            continue
        heading = _HEADING.match(line)
        if heading:
            yield from flush()
            yield Block("heading", line, len(heading.group(1)))
        elif _PREFIX.sub("", line, count=1).startswith("|"):
            yield from flush()
            start = i
            while i + 1 < n and _PREFIX.sub("", lines[i + 1], count=1).startswith("|"):
                i += 1
            yield Block("table", "\n".join(lines[start:i + 1]))
        elif not line.strip():
            yield from flush()
        else:
            para.append(line)
        i += 1
    yield from flush()


def _heading_text(block: Block) -> str:
    found = _HEADING.match(block.text)
    return plain_text(found.group(2)).strip() if found else ""


def _split_block(block: Block, size: int) -> list[str]:
    """A block larger than `size` in pieces of at most `size`: code and tables at lines (each piece
    of code fenced again, each piece of a table under its header rows again), text at spaces."""
    if block.kind not in ("code", "table"):
        return _split_text(block.text, size)
    lines = block.text.splitlines()
    head, tail, body = lines[:2], [], lines[2:]  # a table's header row and its |---| line
    if block.kind == "code":
        opening = lines[0]
        fence = _FENCE.match(opening)
        closing = opening[: fence.end()] if fence else "```"  # the prefix (indent, quote) and the mark
        head, tail = [opening], [closing]
        body = lines[1:-1] if len(lines) > 1 and _FENCE.match(lines[-1]) else lines[1:]
    fixed = sum(len(line) + 1 for line in head + tail)
    room = max(1, size - fixed)
    pieces: list[str] = []
    current: list[str] = []
    used = fixed
    for whole in body:
        # A line longer than a piece holds is cut (a minified script, a one-line table row).
        for line in [whole[k:k + room] for k in range(0, len(whole), room)] or [""]:
            if current and used + len(line) + 1 > size:
                pieces.append("\n".join(head + current + tail))
                current, used = [], fixed
            current.append(line)
            used += len(line) + 1
    if current or not pieces:
        pieces.append("\n".join(head + current + tail))
    return pieces


def _split_text(text: str, size: int) -> list[str]:
    pieces: list[str] = []
    while len(text) > size:
        cut = text.rfind("\n", 0, size + 1)
        if cut <= 0:
            cut = text.rfind(" ", 0, size + 1)
        if cut <= 0:
            cut = size
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def chunk_markdown(markdown: str, size: int = DEFAULT_CHUNK_SIZE) -> list[Chunk]:
    """`markdown` in chunks of at most `size` characters, each of whole blocks: a heading starts a
    new chunk unless the section before it is short enough to share one with it; a section larger
    than `size` breaks between paragraphs; a code block or table is never cut unless it alone is
    larger than `size` (then at lines, each piece a valid block again); a paragraph larger than
    `size` breaks at line ends or spaces. `size` < 1: the whole Markdown as one chunk."""
    if not markdown.strip():
        return []
    if size < 1:
        return [Chunk(0, (), markdown.strip())]
    # Sections: the blocks under each heading (the heading first), with the path to it.
    sections: list[tuple[tuple[str, ...], list[Block]]] = []
    path: list[tuple[int, str]] = []
    for block in blocks(markdown):
        if block.kind == "heading":
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, _heading_text(block)))
            sections.append((tuple(text for _, text in path), [block]))
        elif sections:
            sections[-1][1].append(block)
        else:
            sections.append(((), [block]))
    chunks: list[Chunk] = []
    texts: list[str] = []
    where: tuple[str, ...] = ()
    used = 0  # the characters of `texts` joined, plus 2

    def close() -> None:
        nonlocal used
        if texts:
            chunks.append(Chunk(len(chunks), where, "\n\n".join(texts)))
            texts.clear()
        used = 0

    for section_path, section in sections:
        if texts and used + sum(len(b.text) + 2 for b in section) > size:
            close()  # the section does not fit beside the one before: its heading starts a chunk
        for block in section:
            if len(block.text) > size:
                close()
                for piece in _split_block(block, size):
                    where = section_path
                    texts.append(piece)
                    close()
                continue
            if texts and used + len(block.text) + 2 > size:
                close()
            if not texts:
                where = section_path
            texts.append(block.text)
            used += len(block.text) + 2
    close()
    return chunks


def page_chunks(page: MarkdownPage, size: int = DEFAULT_CHUNK_SIZE) -> list[MarkdownChunk]:
    """A page's chunks, each with the page's URL, title and provenance."""
    return [MarkdownChunk(page.url, page.title, chunk, page.provenance)
            for chunk in chunk_markdown(page.markdown, size)]


# ----- rows ---------------------------------------------------------------------------------------


def page_row(page: MarkdownPage) -> dict[str, Any]:
    """One row of the pages table (JSONL or Parquet)."""
    p = page.provenance
    return {"url": page.url, "title": page.title, "language": page.language, "markdown": page.markdown,
            "warc_record_id": p.record_id, "warc_file": p.warc_file, "warc_offset": p.offset,
            "fetch_time": p.fetch_time}


def chunk_row(chunk: MarkdownChunk) -> dict[str, Any]:
    """One row of the chunks table."""
    p = chunk.provenance
    return {"url": chunk.url, "title": chunk.title, "chunk": chunk.chunk.index,
            "heading_path": list(chunk.chunk.heading_path), "text": chunk.chunk.text,
            "warc_record_id": p.record_id, "warc_file": p.warc_file, "warc_offset": p.offset,
            "fetch_time": p.fetch_time}


def page_schema() -> Any:
    """The Arrow schema of the pages table."""
    import pyarrow as pa

    return pa.schema([("url", pa.string()), ("title", pa.string()), ("language", pa.string()),
                      ("markdown", pa.string()), *_provenance_fields()])


def chunk_schema() -> Any:
    """The Arrow schema of the chunks table."""
    import pyarrow as pa

    return pa.schema([("url", pa.string()), ("title", pa.string()), ("chunk", pa.int32()),
                      ("heading_path", pa.list_(pa.string())), ("text", pa.string()),
                      *_provenance_fields()])


def _provenance_fields() -> list[tuple[str, Any]]:
    import pyarrow as pa

    return [("warc_record_id", pa.string()), ("warc_file", pa.string()), ("warc_offset", pa.int64()),
            ("fetch_time", pa.string())]
