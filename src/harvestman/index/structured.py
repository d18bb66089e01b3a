"""Structured data embedded in one HTML page (JSON-LD, microdata, RDFa, OpenGraph) as flat typed items.

The parsing is extruct's (Scrapinghub's extractor, kept up for a decade and used by Scrapy users);
what is done here is the shape: every top-level item of a page becomes one `Item` of one type, its
properties flattened to text (nested values as JSON text), ready to become a row of that type's table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

SYNTAXES = ("json-ld", "microdata", "rdfa", "opengraph")
# Columns every type table starts with; a property of the same name is renamed item_<name>.
RESERVED = ("url", "syntax", "item", "item_id")
# Table names the query command gives other things (the pages view, the search macro, field tables).
_TAKEN_TABLES = frozenset({"pages", "search", "fields"})
_RDFA_NS = "http://www.w3.org/ns/rdfa#"
_NOT_NAME = re.compile(r"[^0-9A-Za-z_]+")


@dataclass(frozen=True, slots=True)
class Item:
    """One typed item found on a page: which table it belongs to and its flattened properties."""

    table: str  # the type's table name: `person`, `product`, `og_article`
    syntax: str  # json-ld, microdata, rdfa or opengraph
    item_id: str  # its @id / itemid ('' when none)
    properties: tuple[tuple[str, str | None], ...]  # (column, text value) in page order


@dataclass(frozen=True, slots=True)
class PageItems:
    """What one page's structured data gave: the items, and the blocks that could not be read."""

    items: tuple[Item, ...]
    errors: tuple[str, ...]  # "json-ld: Expecting value: line 1 column 14", one per broken block


def column_name(name: str) -> str:
    """A property name as a column: not-word characters to `_`, reserved names prefixed `item_`."""
    column = _NOT_NAME.sub("_", name).strip("_") or "value"
    if column[0].isdigit():
        column = "p_" + column
    return f"item_{column}" if column in RESERVED else column


def table_name(type_name: str, *, prefix: str = "") -> str:
    """The table of a type: its local name (after the last /, # or :), lowercased, word characters."""
    local = re.split(r"[/#:]", type_name.strip().rstrip("/#"))[-1]
    name = prefix + (_NOT_NAME.sub("_", local).strip("_").lower() or "thing")
    if name[0].isdigit():
        name = "t_" + name
    return f"{name}_type" if name in _TAKEN_TABLES or name.startswith("fields_") else name


def _text(value: Any) -> str | None:
    """A property value as text: strings as they are, anything else (numbers, lists, objects) as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _types(value: Any) -> list[str]:
    """The type names an item declares (a string or a list of strings)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v.strip()]
    return []


def _items_of(typed: Mapping[str, Any], syntax: str, *, prefix: str = "") -> Iterator[Item]:
    """One Item per declared type of a JSON-LD-shaped object (`@type`, `@id`, properties)."""
    properties = tuple((column_name(k), _text(v)) for k, v in typed.items() if not k.startswith("@"))
    item_id = typed.get("@id")
    for type_name in dict.fromkeys(_types(typed.get("@type"))):
        yield Item(table_name(type_name, prefix=prefix), syntax,
                   item_id if isinstance(item_id, str) else "", properties)


def _jsonld_nodes(data: Any) -> Iterator[Mapping[str, Any]]:
    """The top-level nodes of a JSON-LD document: the object itself, a list's members, @graph members."""
    if isinstance(data, list):
        for member in data:
            yield from _jsonld_nodes(member)
    elif isinstance(data, dict):
        graph = data.get("@graph")
        if isinstance(graph, list):
            yield from _jsonld_nodes(graph)
        if "@type" in data or not isinstance(graph, list):
            yield data


def _microdata(item: Mapping[str, Any]) -> dict[str, Any]:
    """A microdata item (extruct's type/properties/id shape) as a JSON-LD-shaped object, nested too."""
    out: dict[str, Any] = {}
    if item.get("type"):
        out["@type"] = _short_types(item["type"])
    if isinstance(item.get("id"), str):
        out["@id"] = item["id"]
    for key, value in (item.get("properties") or {}).items():
        out[key] = _microdata_value(value)
    return out


def _microdata_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_microdata_value(v) for v in value]
    if isinstance(value, dict) and "properties" in value:
        return _microdata(value)
    return value


def _local(iri: str) -> str:
    """The last segment of a property IRI: https://schema.org/name -> name."""
    return re.split(r"[/#]", iri.rstrip("/#"))[-1] or iri


def _short_types(value: Any) -> str | list[str]:
    """Type IRIs as local names (https://schema.org/Offer -> Offer), one as a string, as JSON-LD has them."""
    names = [_local(t) for t in _types(value)]
    return names[0] if len(names) == 1 else names


def _rdfa_objects(nodes: list[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """RDFa's expanded JSON-LD as compact objects: typed nodes, blank nodes that others refer to
    inlined where they are referred to (so a Place inside an Event is a nested value, as in JSON-LD)."""
    by_id = {n.get("@id"): n for n in nodes if isinstance(n.get("@id"), str)}
    referred = {v.get("@id") for n in nodes for key, values in n.items() if not key.startswith("@")
                and isinstance(values, list) for v in values if isinstance(v, dict) and "@id" in v}

    def compact(node: Mapping[str, Any], seen: frozenset[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"@type": _short_types(node.get("@type"))}
        node_id = node.get("@id")
        if isinstance(node_id, str) and not node_id.startswith("_:"):
            out["@id"] = node_id
        for key, values in node.items():
            if key.startswith("@") or key.startswith(_RDFA_NS) or not isinstance(values, list):
                continue
            converted = [value(v, seen | {str(node_id)}) for v in values]
            out[_local(key)] = converted[0] if len(converted) == 1 else converted
        return out

    def value(v: Any, seen: frozenset[str]) -> Any:
        if not isinstance(v, dict):
            return v
        if "@value" in v:
            return v["@value"]
        ref = v.get("@id")
        if isinstance(ref, str) and ref.startswith("_:") and ref in by_id and ref not in seen:
            return compact(by_id[ref], seen)
        return ref

    for node in nodes:
        node_id = node.get("@id")
        if not _types(node.get("@type")):
            continue  # untyped subjects: the page's own <meta property> tags, read as OpenGraph instead
        if isinstance(node_id, str) and node_id.startswith("_:") and node_id in referred:
            continue  # a nested value of another item
        yield compact(node, frozenset())


def _opengraph(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """OpenGraph's (property, content) pairs as one object: og: dropped, repeated ones as a list,
    the type from og:type (the protocol's default, website, when there is none)."""
    out: dict[str, Any] = {}
    og_type = "website"
    for key, content in pairs:
        if key == "og:type":
            og_type = content.strip() or og_type
            continue
        name = key[3:] if key.startswith("og:") else key
        if name in out:
            previous = out[name]
            out[name] = [*previous, content] if isinstance(previous, list) else [previous, content]
        else:
            out[name] = content
    out["@type"] = og_type
    return out


def _error(syntax: str, exc: Exception) -> str:
    return f"{syntax}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def page_items(tree: Any, base_url: str) -> PageItems:
    """Every typed item in a page parsed by extruct's XML-DOM HTML parser (`parse_xmldom_html`).

    A broken block costs only itself: JSON-LD is read script by script, and each syntax apart.
    """
    from extruct.jsonld import JsonLdExtractor
    from extruct.opengraph import OpenGraphExtractor
    from extruct.rdfa import RDFaExtractor
    from extruct.w3cmicrodata import MicrodataExtractor

    items: list[Item] = []
    errors: list[str] = []
    jsonld = JsonLdExtractor()
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        try:  # extract_items on the script node reads that block alone
            data = jsonld.extract_items(script, base_url=base_url)
        except Exception as exc:  # extruct raises json/jstyleson's errors as they come
            errors.append(_error("json-ld", exc))
            continue
        for node in _jsonld_nodes(data):
            items.extend(_items_of(node, "json-ld"))
    readers: tuple[tuple[str, Any], ...] = (
        ("microdata", lambda: (_microdata(i)
                               for i in MicrodataExtractor().extract_items(tree, base_url=base_url))),
        ("rdfa", lambda: _rdfa_objects(RDFaExtractor().extract_items(tree, base_url=base_url))),
        ("opengraph", lambda: (_opengraph(i.get("properties") or [])
                               for i in OpenGraphExtractor().extract_items(tree, base_url=base_url)
                               if i.get("properties"))),
    )
    for syntax, read in readers:
        try:
            objects = list(read())
        except Exception as exc:  # a page the extractor cannot read: count it, keep the others
            errors.append(_error(syntax, exc))
            continue
        for obj in objects:
            items.extend(_items_of(obj, syntax, prefix="og_" if syntax == "opengraph" else ""))
    return PageItems(tuple(items), tuple(errors))
