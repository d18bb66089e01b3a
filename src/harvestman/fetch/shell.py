"""Whether a page's HTML looks like an application shell, whose links and text only scripts make.

`--render auto` fetches the HTML first and renders only the pages this judges shells, so that the
browser's cost (~100x a parse) is paid where the HTML alone would show an empty page. The signals
are those of the common single-page frameworks: an empty mount node (`<div id="root"></div>`,
`<app-root>`), little visible text beside scripts, a `<nav>` without links (navigation built by a
script), a `<noscript>` asking for JavaScript. A page without any script is never a shell.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode as Node

from harvestman.model.pagetree import parse_tree

# Ids and tags the common frameworks mount their application on (React, Vue, Next, Nuxt, Gatsby,
# Svelte, Angular, Ember, Preact...).
MOUNT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app", "application",
                       "react-root", "vue-app", "spa", "ember-app", "mount", "container-app"})
MOUNT_TAGS = ("app-root",)
LITTLE_TEXT = 200  # characters of visible text below which a page with scripts is a shell
SOME_TEXT = 1500  # ... and below which a page with scripts and not one link is one
LONG_TEXT = 3000  # a page with this much text is a document, even with an empty mount node (a widget)
_NOSCRIPT_ASKS = re.compile(r"javascript|enable|browser", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def _visible_text(body: Node) -> str:
    for node in body.css("script, style, noscript, template"):
        node.decompose()
    return _SPACE.sub(" ", body.text(separator=" ")).strip()


def _empty(node: Node) -> bool:
    """No element inside and no text: what a framework fills in."""
    return node.child is None or (not node.css_first("*") and not (node.text() or "").strip())


def shell_reason(html: str) -> str:
    """Why `html` looks like an application shell ('' when it reads as a document without scripts)."""
    tree = parse_tree(html)
    scripts = tree.css("script")
    if not scripts:
        return ""
    inline = " ".join(s.text() or "" for s in scripts if not s.attributes.get("src"))
    body = tree.body
    if body is None:
        return "no body"
    empty_ids = [(node.tag, (node.attributes.get("id") or "")) for node in body.css("[id]") if _empty(node)]
    noscript = " ".join(n.text() or "" for n in tree.css("noscript"))
    navs = body.css("nav")
    links = len(body.css("a[href]"))
    text = _visible_text(body)
    for tag, ident in empty_ids:
        if ident.lower() in MOUNT_IDS and len(text) < LONG_TEXT:
            return f"empty mount node #{ident}"
        if tag in MOUNT_TAGS:
            return f"empty mount node <{tag}>"
        if ident and inline and (f"'{ident}'" in inline or f'"{ident}"' in inline or f"#{ident}" in inline):
            return f"an empty element an inline script fills (#{ident})"
    for nav in navs:
        if nav.css_first("a[href]") is None:
            return "navigation without links (built by a script)"
    if noscript and _NOSCRIPT_ASKS.search(noscript) and len(text) < SOME_TEXT:
        return "a <noscript> fallback asks for JavaScript"
    if len(text) < LITTLE_TEXT:
        return f"little visible text ({len(text)} characters) beside {len(scripts)} scripts"
    if links == 0 and len(text) < SOME_TEXT:
        return "no links beside scripts"
    return ""
