"""Texts by topic from real documentation, for topical webs (tests/support/topichosts.py).

Debian's documentation packages (`apt-get install python3.11-doc postgresql-doc-15 git-doc`):
- Python 3.11's library reference (PSF licence), its modules grouped into topics (networking,
  concurrency, text, numbers, files, developer tools); the "What's new" notes are the hubs' kind;
- PostgreSQL 15's manual (PostgreSQL licence): "db";
- git's manual pages (GPL-2): "vcs".
Each page's prose (its main part's paragraphs: navigation and code left out) is cut into pieces of
`words` words, each piece one document (title: the page's title and the piece's number).

The tests read a small sample of it committed as tests/data/focus_docs.json (written by
`python -m tests.support.doccorpus tests/data/focus_docs.json`): Python's and PostgreSQL's text only,
under permissive licences (git's GPL-2 pages stay out of the repository); the benchmark reads
/usr/share/doc.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

Doc = tuple[str, str]  # (title, text)

DOC_ROOT = Path("/usr/share/doc")
PYTHON = "python3.11/html"
POSTGRES = "postgresql-doc-15/html"
GIT = "git/html"
PACKAGES = "python3.11-doc postgresql-doc-15 git-doc"
GROUPS = {
    "net": r"^(socket|ssl|http\..*|urllib\..*|ftplib|smtplib|poplib|imaplib|email\..*|socketserver|xmlrpc\..*"
           r"|ipaddress|select|selectors|wsgiref|nntplib|telnetlib|http|urllib|email|mailbox|netrc|"
           r"smtpd|asynchat|asyncore|cgi|webbrowser|mimetypes|uuid)$",
    "concurrency": r"^(asyncio.*|threading|multiprocessing.*|concurrent.*|queue|subprocess|sched|contextvars|"
                   r"_thread|signal)$",
    "text": r"^(re|string|codecs|unicodedata|textwrap|difflib|csv|json|stringprep|readline|locale|gettext|"
            r"html.*|xml.*|pprint|reprlib|tomllib|configparser)$",
    "numbers": r"^(math|cmath|decimal|fractions|statistics|random|numbers|array|struct|bisect|heapq|"
               r"operator|functools|itertools|collections.*)$",
    "files": r"^(os|os\.path|pathlib|shutil|glob|fnmatch|tempfile|tarfile|zipfile|gzip|bz2|lzma|zlib|filecmp|"
             r"fileinput|stat|io|mmap|sqlite3|dbm|shelve|pickle|copyreg|marshal)$",
    "devtools": r"^(unittest.*|doctest|pdb|profile|trace|tracemalloc|timeit|typing|inspect|dis|ast|"
                r"logging.*|warnings|traceback|faulthandler|bdb|sys|gc|importlib.*|venv|zipapp)$",
}
HUB = "hub"


def pieces(path: Path, words: int, min_words: int) -> list[Doc]:
    """A documentation page's prose cut into pieces of `words` words (the last one kept if it has
    `min_words`)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(path.read_text(encoding="utf-8", errors="replace"))
    title_node = tree.css_first("title")
    title = title_node.text(deep=True).strip() if title_node else path.stem
    title = re.split(r" — | - ", title)[0].strip() or path.stem
    main = tree.css_first("div.body") or tree.css_first("#content") or tree.body
    prose = " ".join(node.text(deep=True, separator=" ") for node in main.css("p")) if main else ""
    tokens = prose.replace("¶", " ").split()
    out = []
    for n, start in enumerate(range(0, len(tokens), words)):
        chunk = tokens[start:start + words]
        if len(chunk) >= min_words:
            out.append((f"{title} ({n + 1})", " ".join(chunk)))
    return out


def doc_corpus(root: Path = DOC_ROOT, *, words: int = 150, min_words: int = 80) -> dict[str, list[Doc]]:
    """Documents by topic (and "hub": release notes) from the documentation under `root`; SystemExit
    naming the packages when they are missing."""
    folders = [root / PYTHON, root / POSTGRES, root / GIT]
    if not all(folder.is_dir() for folder in folders):
        sys.exit(f"documentation missing under {root}: apt-get install {PACKAGES}")
    by_topic: dict[str, list[Doc]] = {topic: [] for topic in GROUPS}
    for page in sorted((root / PYTHON / "library").glob("*.html")):
        for topic, pattern in GROUPS.items():
            if re.match(pattern, page.stem):
                by_topic[topic].extend(pieces(page, words, min_words))
                break
    by_topic[HUB] = [doc for page in sorted((root / PYTHON / "whatsnew").glob("*.html"))
                     for doc in pieces(page, words, min_words)]
    by_topic["db"] = [doc for page in sorted((root / POSTGRES).glob("*.html"))
                      if not page.stem.startswith(("release-", "bookindex", "index"))
                      for doc in pieces(page, words, min_words)]
    by_topic["vcs"] = [doc for page in sorted((root / GIT).glob("git*.html"))
                       for doc in pieces(page, words, min_words)]
    return by_topic


def sample(corpus: dict[str, list[Doc]], counts: dict[str, int], *, seed: int = 5) -> dict[str, list[Doc]]:
    """`counts[topic]` documents of each topic, drawn at random."""
    rng = random.Random(seed)
    out = {}
    for topic, count in counts.items():
        docs = list(corpus[topic])
        rng.shuffle(docs)
        if len(docs) < count:
            raise ValueError(f"{topic}: {len(docs)} documents, {count} wanted")
        out[topic] = docs[:count]
    return out


def read_corpus(path: Path) -> dict[str, list[Doc]]:
    """A corpus `write_corpus` wrote."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {topic: [(title, text) for title, text in docs] for topic, docs in data.items()}


def write_corpus(path: Path, corpus: dict[str, list[Doc]]) -> None:
    """Write a corpus as JSON (topic -> [[title, text], ...]), one document a line."""
    lines = []
    for topic in sorted(corpus):
        docs = ",\n".join("  " + json.dumps([title, text], ensure_ascii=False)
                          for title, text in corpus[topic])
        lines.append(f"{json.dumps(topic)}: [\n{docs}\n]")
    Path(path).write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


# What the tests' sample holds: two small webs (tests/test_focus_hosts.py) of 8-page hosts, and
# the focus file's examples; PostgreSQL's "db" is their target.
TEST_COUNTS = {"db": 52, "files": 52, "net": 52, "numbers": 52, "hub": 32}
TEST_WORDS = 180


if __name__ == "__main__":
    full = doc_corpus(words=TEST_WORDS, min_words=TEST_WORDS)
    write_corpus(Path(sys.argv[1]), sample(full, TEST_COUNTS))
