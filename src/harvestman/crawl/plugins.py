"""Plugins: extension points as Python entry points, loaded by name (Nutch's plugins).

An installed package offers plugins in its metadata's entry points, one group a kind:

| group | the object an entry point names |
|---|---|
| `harvestman.url_filters` | a callable `(url: str) -> bool`: keep the (normalized) URL or drop it |
| `harvestman.url_normalizers` | a callable `(url: str) -> str`: the URL to follow instead |
| `harvestman.parsers` | a `DocumentParser` (crawl/documents.py): `content_types` and `parse(...)` |
| `harvestman.scoring` | a `LinkScorer` (policy/ordering.py): `(page, link) -> float` |
| `harvestman.index_writers` | a `SinkFactory` (crawl/sinks.py): a PageSink class, made in each process |

A crawl runs only the plugins its `plugins` setting names, like Nutch's plugin.includes: installing a
package changes no crawl by itself, and the default crawl (none named) never reads the installed
packages' metadata. A name enables every entry point of that name, in any group. Plugins are loaded
by name in each process that crawls (worker processes too): nothing of them is pickled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harvestman.crawl.documents import DocumentParser
from harvestman.crawl.sinks import SinkFactory
from harvestman.model.errors import ConfigError
from harvestman.policy.ordering import LinkScorer
from harvestman.policy.scope import UrlRefiner

GROUPS = ("url_filters", "url_normalizers", "parsers", "scoring", "index_writers")
PREFIX = "harvestman."

UrlFilter = Callable[[str], bool]
UrlNormalizer = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Plugins:
    """The plugins a crawl runs, loaded: what each extension point gets."""

    names: tuple[str, ...] = ()
    url_filters: tuple[UrlFilter, ...] = ()
    url_normalizers: tuple[UrlNormalizer, ...] = ()
    parsers: tuple[DocumentParser, ...] = ()
    scorer: LinkScorer | None = None
    index_writers: tuple[SinkFactory, ...] = ()

    def refiner(self) -> UrlRefiner | None:
        """The URL normalizers then the filters, as one function for `scope.followed_links`; None
        when there is neither (the link path then makes no call)."""
        if not self.url_filters and not self.url_normalizers:
            return None
        normalizers, filters = self.url_normalizers, self.url_filters

        def refine(url: str) -> str | None:
            for normalize in normalizers:
                url = normalize(url)
            for keep in filters:
                if not keep(url):
                    return None
            return url

        return refine


NO_PLUGINS = Plugins()


def installed() -> dict[str, list[str]]:
    """Group (without the `harvestman.` prefix) -> the names of its installed entry points."""
    from importlib import metadata  # here, not at start-up: a crawl without plugins never reads it

    found: dict[str, list[str]] = {}
    for group in GROUPS:
        names = sorted({point.name for point in metadata.entry_points(group=PREFIX + group)})
        if names:
            found[group] = names
    return found


def _installed_text() -> str:
    found = installed()
    if not found:
        return "no harvestman plugin is installed"
    return "installed: " + "; ".join(f"{group}: {', '.join(names)}" for group, names in found.items())


def _check(group: str, name: str, obj: Any) -> None:
    """Refuse an object that is not what its group wants, naming the plugin."""
    if group == "parsers":
        types = getattr(obj, "content_types", None)
        if (not callable(getattr(obj, "parse", None)) or isinstance(types, str) or not types
                or not all(isinstance(t, str) for t in types)):
            raise ConfigError(f"plugin {name!r} ({PREFIX}{group}) is not a parser: it needs `content_types` "
                              "(media types) and a `parse(result, *, max_links, with_text)` method")
    elif not callable(obj):
        raise ConfigError(f"plugin {name!r} ({PREFIX}{group}) is not callable: got {type(obj).__name__}")


def load_plugins(names: Sequence[str]) -> Plugins:
    """The plugins named (entry point names), loaded; an unknown name, a plugin that fails to load or
    one of the wrong shape is a ConfigError listing what is installed."""
    if not names:
        return NO_PLUGINS
    from importlib import metadata

    loaded: dict[str, list[Any]] = {group: [] for group in GROUPS}
    for name in dict.fromkeys(names):
        matches = [(group, point) for group in GROUPS
                   for point in metadata.entry_points(group=PREFIX + group, name=name)]
        if not matches:
            raise ConfigError(f"unknown plugin {name!r}: {_installed_text()}")
        for group, point in matches:
            try:
                obj = point.load()
            except Exception as exc:  # a broken package: say which, and why
                raise ConfigError(f"plugin {name!r} ({PREFIX}{group}, {point.value}) failed to load: "
                                  f"{type(exc).__name__}: {exc}") from None
            _check(group, name, obj)
            loaded[group].append(obj)
    scorers = loaded["scoring"]
    if len(scorers) > 1:
        raise ConfigError(f"plugins name {len(scorers)} link scorers; a crawl takes one at most")
    return Plugins(
        names=tuple(dict.fromkeys(names)),
        url_filters=tuple(loaded["url_filters"]),
        url_normalizers=tuple(loaded["url_normalizers"]),
        parsers=tuple(loaded["parsers"]),
        scorer=scorers[0] if scorers else None,
        index_writers=tuple(loaded["index_writers"]),
    )


def with_plugin_scorer(scorer: LinkScorer | None, plugins: Plugins) -> LinkScorer | None:
    """The crawl's link scorer: the one given in Python, or a scoring plugin's (not both)."""
    if scorer is not None and plugins.scorer is not None:
        raise ConfigError("a link scorer is given in Python and a scoring plugin is enabled: choose one")
    return scorer if scorer is not None else plugins.scorer
