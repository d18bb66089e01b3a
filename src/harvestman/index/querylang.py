"""The full-text search's query language: a query string parsed into a tree of frozen records (no
index needed, so every syntax error is found before the index is opened), and that tree turned into
a tantivy query over a crawl's index.

The syntax (docs/search.md): words, "phrases", `field:word`, `field:"phrase"`, `field:(...)`,
`word*` (every indexed word with that prefix), `word~N` (indexed words N edits away), `"phrase"~N`
(its words at most N apart), `^N` boosts, parentheses, `+must`, `-word` / `NOT word`, `AND`, `OR`.
Binding, tightest first: NOT / - / +, then AND, then OR, then clauses side by side, which find pages
matching any of them (more of them rank higher) less the pages their negated ones match: `a -b` ==
`a NOT b` == `a AND NOT b`. tantivy's own parser is not used for this: it reads `a AND NOT b` as
"a, and a clause that only excludes" (which matches nothing) and silently drops a `*`.

A query the language cannot read (a pasted error message, `0.1 + 0.2`, `== "__main__"`) is searched as
the plain words it holds, with a note saying so (read_query).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harvestman.index.pagetext import API_MARK, term_key
from harvestman.index.schema import (
    ALL_FIELD,
    API_NAME_BOOST,
    DEFAULT_BOOSTS,
    DEFINES_BOOST,
    DEFINES_FIELD,
    FIELD_BOOSTS,
    RAW_FIELDS,
)
from harvestman.model.errors import QueryError

# A prefix expands to the indexed words it starts; more than this many in one field is refused (and
# the user told to give a longer prefix) rather than silently cut to some of them.
MAX_PREFIX_TERMS = 1000
QUERY_FIELDS = (*FIELD_BOOSTS, *RAW_FIELDS)
OPERATORS = ("AND", "OR", "NOT")
# Words that say how a question is asked, not what it is about ("what is the GIL"): a query's plain
# words among them are left out when it has others, so they neither find pages nor rank them. Inside
# a "phrase" they stay, and they count in the proximity credit below.
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do", "does", "for",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "mean", "means", "my", "of", "on", "or",
    "should", "that", "the", "their", "then", "there", "these", "they", "this", "to", "vs", "was",
    "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your"))
# Pages holding a query's plain words near each other, in its order, rank higher: a sloppy phrase of
# them (stop words included) scores on top of the words. Measured in bench/search_relevance.py.
PROXIMITY_SLOP = 3
PROXIMITY_BOOST = 0.5
MAX_EDITS = 2  # word~N: tantivy's fuzzy queries go up to 2 edits (as Lucene's)
_FUZZY = re.compile(rf"([^~]+)~([0-{MAX_EDITS}]?)")
_DEFAULT_SLOP = 2
_SLOP = re.compile(r"~[0-9]*")


@dataclass(frozen=True, slots=True)
class Word:
    """A word, or with `prefix` every indexed word it starts (`sock*`); one that the field's
    tokenizer splits in several (`list.sort`) is searched as a phrase."""

    text: str
    field: str | None = None
    prefix: bool = False
    fuzzy: int = 0  # sort~1: also the indexed words at most this many edits away


@dataclass(frozen=True, slots=True)
class Phrase:
    """Words in this order ("borrow checker"); with `slop`, at most that many words apart."""

    text: str
    field: str | None = None
    slop: int = 0


@dataclass(frozen=True, slots=True)
class Not:
    """NOT clause, -clause: the pages it matches are left out."""

    clause: Node


@dataclass(frozen=True, slots=True)
class Must:
    """+clause: every page found matches it."""

    clause: Node


@dataclass(frozen=True, slots=True)
class Boost:
    """clause^factor: its matches weigh `factor` times as much in the score."""

    clause: Node
    factor: float


@dataclass(frozen=True, slots=True)
class AllOf:
    """a AND b AND ...: pages matching every clause."""

    clauses: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """a OR b OR ...: pages matching any clause."""

    clauses: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Clauses:
    """Clauses side by side: pages matching any of the plain ones and every +must one, less those
    matching a negated one."""

    clauses: tuple[Node, ...]


Node = Word | Phrase | Not | Must | Boost | AllOf | AnyOf | Clauses


def excludes(node: Node) -> bool:
    """Whether a clause only leaves pages out (NOT x, -x, NOT a AND NOT b): it finds none itself."""
    if isinstance(node, Not):
        return not excludes(node.clause)
    if isinstance(node, Must | Boost):
        return excludes(node.clause)
    if isinstance(node, AllOf | AnyOf | Clauses):
        return all(excludes(c) for c in node.clauses)
    return False


_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<open>\() | (?P<close>\))
  | (?P<phrase>"[^"]*") | (?P<quote>")
  | (?P<boost>\^[0-9]+(?:\.[0-9]+)?)(?![^\s()])
  | (?<![^\s()+-])(?P<field>[A-Za-z_][A-Za-z0-9_]*:)  # not inside a field's value: url:http://...
  | (?P<sign>[+-])
  | (?P<word>[^\s()"^]+)
  | (?P<caret>\^)
""", re.VERBOSE)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # a group name of _TOKEN, or AND / OR / NOT
    text: str
    start: int
    end: int


def _tokens(query: str) -> list[_Token]:
    found = []
    for match in _TOKEN.finditer(query):
        kind = match.lastgroup or ""
        if kind == "space":
            continue
        text = match.group()
        if kind == "word" and text in OPERATORS:
            kind = text
        found.append(_Token(kind, text, match.start(), match.end()))
    return found


class _Parser:
    """Recursive descent over the tokens; one method per binding level."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens = _tokens(query)
        self.at = 0

    def fail(self, reason: str) -> QueryError:
        return QueryError(f"bad query {self.query!r}: {reason}")

    def peek(self) -> _Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def attached(self, before: _Token) -> _Token | None:
        """The next token when it follows `before` with no space between."""
        token = self.peek()
        return token if token is not None and token.start == before.end else None

    def clauses(self, field: str | None) -> Node:
        items: list[Node] = []
        while (token := self.peek()) is not None and token.kind != "close":
            items.append(self.any_of(field))
        if not items:
            raise self.fail("empty parentheses")
        return items[0] if len(items) == 1 else Clauses(tuple(items))

    def operands(self, operator: str, field: str | None) -> list[Node]:
        """The clauses joined by `operator` (AND or OR), each parsed by the next tighter level."""
        below = self.all_of if operator == "OR" else self.unary
        items = [below(field)]
        while (token := self.peek()) is not None and token.kind == operator:
            self.take()
            after = self.peek()
            if after is None or after.kind in ("close", "AND", "OR"):
                raise self.fail(f"{operator} needs a clause on both sides")
            items.append(below(field))
        return items

    def any_of(self, field: str | None) -> Node:
        items = self.operands("OR", field)
        if len(items) == 1:
            return items[0]
        if any(excludes(c) for c in items):
            # "a OR NOT b" would be every page but b's; say what to write instead of guessing.
            raise self.fail("OR cannot join a NOT or -clause (write a NOT b, or (a OR b) NOT c)")
        return AnyOf(tuple(items))

    def all_of(self, field: str | None) -> Node:
        items = self.operands("AND", field)
        return items[0] if len(items) == 1 else AllOf(tuple(items))

    def unary(self, field: str | None) -> Node:
        token = self.peek()
        if token is None:
            raise self.fail("a clause is missing at the end")
        if token.kind in ("AND", "OR"):
            raise self.fail(f"{token.kind} needs a clause on both sides")
        if token.kind in ("NOT", "sign"):
            self.take()
            after = self.peek() if token.kind == "NOT" else self.attached(token)
            if after is None or after.kind in ("close", "AND", "OR"):
                what = "NOT needs a clause after it" if token.kind == "NOT" else \
                    f"{token.text} must stand right before the clause it marks ({token.text}word)"
                raise self.fail(what)
            inner = self.unary(field)
            return Must(inner) if token.text == "+" else Not(inner)
        return self.atom(field)

    def atom(self, field: str | None) -> Node:
        token = self.take()
        node: Node
        if token.kind == "open":
            node = self.clauses(field)
            if self.peek() is None:
                raise self.fail("unbalanced parentheses: a '(' is not closed")
            self.take()
        elif token.kind == "field":
            name = token.text[:-1]
            if name not in QUERY_FIELDS:
                raise self.fail(f"unknown field {name!r} (fields: {', '.join(QUERY_FIELDS)}; quote a "
                                f"word holding a colon)")
            after = self.attached(token)
            if after is None or after.kind not in ("word", "phrase", "open"):
                raise self.fail(f"{token.text} must be followed directly by a word, a \"phrase\" or (...)")
            node = self.atom(name)
        elif token.kind == "phrase":
            text, after = token.text[1:-1], self.attached(token)
            slop = 0
            if after is not None and after.kind == "word" and after.text.startswith("~"):
                if not _SLOP.fullmatch(after.text):
                    raise self.fail(f'a "phrase"~N takes a number of words apart, not {after.text!r}')
                token = self.take()  # a boost follows the ~N
                slop = int(after.text[1:] or _DEFAULT_SLOP)
            node = self.phrase(text, field, slop)
        elif token.kind == "word":
            node = self.word(token.text, field)
        elif token.kind == "close":
            raise self.fail("unbalanced parentheses: a ')' without its '('")
        elif token.kind == "quote":
            raise self.fail('unbalanced quotes: a " is not closed')
        elif token.kind == "boost":
            raise self.fail(f"a boost ({token.text}) must directly follow a word, \"phrase\" or (...)")
        else:
            raise self.fail("^ must be followed by a number (a boost: word^2)")
        boost = self.attached(token if token.kind != "open" else self.tokens[self.at - 1])
        if boost is not None and boost.kind == "boost":
            self.take()
            node = Boost(node, float(boost.text[1:]))
        return node

    def phrase(self, text: str, field: str | None, slop: int = 0) -> Phrase:
        if "*" in text:
            raise self.fail("a * inside quotes is not a prefix: put the prefix outside them (sock*)")
        self.searchable(f'"{text}"', text, field)
        return Phrase(text, field, slop)

    def word(self, text: str, field: str | None) -> Word:
        if text.startswith(("!", "&&", "||")):
            raise self.fail(f"the operators are AND, OR and NOT (or -word, +word), not {text!r}")
        fuzzy = 0
        if "~" in text:
            found = _FUZZY.fullmatch(text)
            if found is None:
                raise self.fail(f"~ follows a word, with at most {MAX_EDITS} edits (sort~1), or a "
                                f'"phrase" (words at most N apart: "a b"~3), not {text!r}')
            text, fuzzy = found.group(1), int(found.group(2) or MAX_EDITS)
            if text.endswith("*"):
                raise self.fail(f"a word is a prefix (sock*) or fuzzy (sock~1), not both: {found.group()!r}")
        stem, prefix = (text[:-1], True) if text.endswith("*") else (text, False)
        if not stem:
            raise self.fail("* alone is not a query: a prefix needs letters before the star (sock*)")
        if "*" in stem:
            raise self.fail(f"only a trailing * is understood (a prefix: sock*), not {text!r}")
        self.searchable(text, stem, field)
        if prefix and field not in RAW_FIELDS and not stem.isalnum():
            raise self.fail(f"a prefix is one word of letters and digits (sock*), not {text!r}")
        return Word(stem, field, prefix, fuzzy)

    def searchable(self, shown: str, text: str, field: str | None) -> None:
        """Refuse a word with nothing a tokenized field indexes (it would silently match nothing)."""
        if field not in RAW_FIELDS and not any(c.isalnum() for c in text):
            raise self.fail(f"{shown} holds no letter or digit to search for")


def read_query(query: str) -> tuple[Node, str]:
    """The tree of a query string and a note: a query the language cannot read is searched as the
    plain words it holds (a pasted error message, `0.1 + 0.2`), and the note says why; a QueryError
    when it holds no word at all."""
    try:
        return parse_query(query), ""
    except QueryError as exc:
        # Each run of non-space characters a word as the index tokenizes it (`pg_hba.conf`: a phrase
        # of its parts); signs, operators and quotes are only text here, and words of punctuation go.
        words = [w.replace('"', " ").strip() for w in query.split()]
        plain = tuple(Word(w) for w in words if any(c.isalnum() for c in w))
        if not plain:
            raise
        tree = plain[0] if len(plain) == 1 else Clauses(plain)
        return tree, f"{exc}; searched as the plain words {' '.join(w.text for w in plain)!r}"


def parse_query(query: str) -> Node:
    """The tree of a query string; a one-line QueryError saying what is wrong with it."""
    if not query.strip():
        raise QueryError("empty query")
    parser = _Parser(query)
    tree = parser.clauses(None)
    if parser.peek() is not None:  # clauses() stops only at the end or at a ')'
        raise parser.fail("unbalanced parentheses: a ')' without its '('")
    if excludes(tree):
        raise parser.fail("it only leaves pages out (NOT, -): say what to find as well (python -snake)")
    return tree


class QueryBuilder:
    """Turns query trees into tantivy queries over one opened index (its searcher: for prefixes)."""

    def __init__(self, index: Any, searcher: Any, fields: Sequence[str] = tuple(FIELD_BOOSTS)) -> None:
        self._index = index
        self._searcher = searcher
        self._schema = index.schema
        self._fields = [f for f in fields if f in FIELD_BOOSTS]  # searched when a clause names none
        # Every default field: a clause naming none is scored in the `all` field (schema.py).
        self._combined = set(self._fields) == set(FIELD_BOOSTS)

    def build(self, tree: Node) -> Any:
        """The tantivy query of a tree parse_query returned (one that finds something), ranked with
        the credits of `_credits` on top of what it matches."""
        import tantivy

        plain = _plain_words(tree)
        query, negated = self._build(without_stop_words(tree))
        if negated:  # parse_query refuses these; a hand-made tree may not
            raise QueryError("a query that only leaves pages out finds nothing")
        credits = self._credits(plain) if self._combined else []
        if not credits:
            return query
        return _boolean([(tantivy.Occur.Must, query), *((tantivy.Occur.Should, c) for c in credits)])

    def _credits(self, words: list[str]) -> list[Any]:
        """Scores for the query's plain words (what a user types as a question) beyond each word's:
        the words near each other, and the page defining the subject they name."""
        import tantivy

        credits = []
        if len(words) >= 2:
            phrase = '"' + " ".join(w.replace("\\", " ") for w in words) + f'"~{PROXIMITY_SLOP}'
            try:
                near = self._index.parse_query(phrase, [ALL_FIELD])
            except ValueError:  # a word of only punctuation to the tokenizer: no proximity to credit
                near = None
            if near is not None:
                credits.append(tantivy.Query.boost_query(near, PROXIMITY_BOOST))
        subject = [w for w in words if w.lower() not in STOP_WORDS] or words
        for key in _subject_keys(subject):
            for term, boost in ((key, DEFINES_BOOST), (API_MARK + key, API_NAME_BOOST)):
                query = tantivy.Query.term_query(self._schema, DEFINES_FIELD, term)
                credits.append(tantivy.Query.boost_query(query, boost))
        return credits

    def _build(self, node: Node) -> tuple[Any, bool]:
        """(query, negated): a negated clause's query matches the pages it leaves out."""
        import tantivy

        if isinstance(node, Word) and node.prefix:
            return self._prefix(node.text, node.field), False
        if isinstance(node, Word) and node.fuzzy:
            return self._fuzzy(node.text, node.field, node.fuzzy), False
        if isinstance(node, Phrase) and node.slop:
            return self._words(node.text, node.field, node.slop), False
        if isinstance(node, Word | Phrase):
            return self._words(node.text, node.field), False
        if isinstance(node, Not):
            query, negated = self._build(node.clause)
            return query, not negated
        if isinstance(node, Must):
            return self._build(node.clause)
        if isinstance(node, Boost):
            query, negated = self._build(node.clause)
            return tantivy.Query.boost_query(query, node.factor), negated
        built = [(self._build(c), isinstance(c, Must)) for c in node.clauses]
        found = [q for (q, negated), _ in built if not negated]
        left_out = [q for (q, negated), _ in built if negated]
        if isinstance(node, AnyOf):  # parse_query lets only all-positive ones through
            if left_out:  # a hand-made tree's NOT a OR NOT b == NOT (a AND b)
                return _boolean([(tantivy.Occur.Must, q) for q in left_out]), True
            return _boolean([(tantivy.Occur.Should, q) for q in found]), False
        if not found:  # NOT a AND NOT b, -a -b: NOT (a OR b)
            return _boolean([(tantivy.Occur.Should, q) for q in left_out]), True
        if isinstance(node, AllOf):
            plain = [(tantivy.Occur.Must, q) for q in found]
        else:
            plain = [(tantivy.Occur.Must if must else tantivy.Occur.Should, q)
                     for (q, negated), must in built if not negated]
        return _boolean(plain + [(tantivy.Occur.MustNot, q) for q in left_out]), False

    def _fields_of(self, field: str | None) -> list[str]:
        return [field] if field else self._fields

    def _words(self, text: str, field: str | None, slop: int = 0) -> Any:
        """A word or phrase (its words at most `slop` apart), tokenized (and stemmed) as each field's
        text was when indexed."""
        import tantivy

        if field in RAW_FIELDS:
            return tantivy.Query.term_query(self._schema, field, text)
        fields = self._fields_of(field)
        boosts = {f: FIELD_BOOSTS[f] for f in fields}
        if field is None and self._combined:
            fields, boosts = list(DEFAULT_BOOSTS), DEFAULT_BOOSTS
        # tantivy's parser is used only to tokenize a quoted phrase the index's way; a backslash is
        # its escape inside quotes, and only punctuation to the tokenizer, so it becomes a space.
        quoted = '"' + text.replace("\\", " ") + '"' + (f"~{slop}" if slop else "")
        try:
            return self._index.parse_query(quoted, fields, field_boosts=boosts)
        except ValueError as exc:
            raise QueryError(f"bad query word {text!r}: {exc}") from None

    def _fuzzy(self, text: str, field: str | None, edits: int) -> Any:
        """The word, and the indexed words at most `edits` away from it as typed (lower-cased where
        the field's words are; in a stemmed field those are stems, as in Lucene's fuzzy queries)."""
        import tantivy

        clauses = [(tantivy.Occur.Should, self._words(text, field))]
        for name in self._fields_of(field):
            term = text if name in RAW_FIELDS else text.lower()
            query = tantivy.Query.fuzzy_term_query(self._schema, name, term, distance=edits)
            weight = FIELD_BOOSTS.get(name, 1.0)
            clauses.append((tantivy.Occur.Should,
                            query if weight == 1.0 else tantivy.Query.boost_query(query, weight)))
        return _boolean(clauses)

    def _prefix(self, text: str, field: str | None) -> Any:
        """Every indexed word starting with `text`, in each field searched (lower-cased where the
        field's words are; a stemmed field holds stems: `sort*` finds sorted, sorting)."""
        import tantivy

        clauses = []
        for name in self._fields_of(field):
            start = text if name in RAW_FIELDS else text.lower()
            terms = self._searcher.terms_with_prefix(name, start, limit=MAX_PREFIX_TERMS + 1)
            if len(terms) > MAX_PREFIX_TERMS:
                raise QueryError(f"bad query: {text}* matches more than {MAX_PREFIX_TERMS} different words "
                                 f"in the field {name}; give a longer prefix")
            weight = FIELD_BOOSTS.get(name, 1.0)
            for term, _ in terms:
                query = tantivy.Query.term_query(self._schema, name, term)
                clauses.append(query if weight == 1.0 else tantivy.Query.boost_query(query, weight))
        if not clauses:
            return tantivy.Query.empty_query()
        return _boolean([(tantivy.Occur.Should, q) for q in clauses])


def _is_plain(node: Node) -> bool:
    return isinstance(node, Word) and node.field is None and not node.prefix and not node.fuzzy


def _plain_words(tree: Node) -> list[str]:
    """The words a query holds side by side at its top, naming no field, in order: `what is the GIL`
    gives four, `python -lists` one, `a OR b` and `"a b"` none (the user said how to match them)."""
    items = tree.clauses if isinstance(tree, Clauses) else (tree,)
    return [item.text for item in items if isinstance(item, Word) and _is_plain(item)]


def without_stop_words(tree: Node) -> Node:
    """The tree without its top-level plain stop words, when it holds other words to find pages by."""
    if not isinstance(tree, Clauses):
        return tree
    kept = tuple(c for c in tree.clauses if not (_is_plain(c) and isinstance(c, Word)
                                                 and c.text.lower() in STOP_WORDS))
    if not kept or all(excludes(c) for c in kept):
        return tree
    return kept[0] if len(kept) == 1 else Clauses(kept)


def _subject_keys(words: list[str]) -> list[str]:
    """The forms of a query's subject a defined term is looked up by: its words (`duck typing`),
    run together (`deep copy`: deepcopy), the last one without a plural s (`f-strings`: f string)."""
    key = term_key(" ".join(words))
    if not key:
        return []
    keys = {key: None, key.replace(" ", ""): None}
    if key.endswith("s") and not key.endswith("ss") and len(key.rsplit(" ", 1)[-1]) > 3:
        keys[key[:-1]] = None
    return list(keys)


def _boolean(clauses: list[tuple[Any, Any]]) -> Any:
    """A boolean query of (occur, query) clauses; a lone plain clause is its own query."""
    import tantivy

    if len(clauses) == 1 and clauses[0][0] != tantivy.Occur.MustNot:
        return clauses[0][1]
    return tantivy.Query.boolean_query(clauses)
