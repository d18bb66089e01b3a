"""Page sinks: what every stored page passes through, built the same in one process and in each worker.

A sink is made inside the process that crawls (from a `SinkFactory`: a class or a module-level
function, so that it pickles into a spawned worker), opened when that process's run starts, given
each page whose fetch has ended (a response, not to be retried) once, and closed when the run ends.
With `--workers N` every worker builds its own sinks; `SinkContext.worker` tells them apart, so a
sink that writes files names its own.

The WARC writer and the run journal are not sinks, and stay beside the pipeline: the journal
records URL outcomes and events (a DNS failure has a download.log line but no page), and the WARC
keeps every response, retried ones too, written before the commit the crash-safety tests check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harvestman.model.config import CrawlConfig
from harvestman.model.errors import ConfigError
from harvestman.model.records import CrawledPage, PageFeatures


@dataclass(frozen=True, slots=True)
class SinkContext:
    """Where a sink runs: the crawl's output folder and this process's place among the workers."""

    out_dir: Path
    worker: int = 0  # this process's index (0 in a one-process crawl)
    workers: int = 1  # how many processes crawl


class PageSink(Protocol):
    """Receives every page this process stores, once, on the crawl's event loop (keep it quick)."""

    def open(self, context: SinkContext) -> None:
        """Get ready before the first page (open files, connections)."""

    def write(self, page: CrawledPage) -> None:
        """Take one stored page."""

    def close(self) -> None:
        """Finish after the last page, also when the run stopped early or failed."""


SinkFactory = Callable[[], PageSink]
# A page's features (None for a page that has none: not HTML, not a 200), computed before the sinks
# and the library's consumer see the page.
PageFeaturer = Callable[[CrawledPage], PageFeatures | None]


@dataclass(frozen=True, slots=True)
class PageStages:
    """What the index layer adds to a crawl's stored pages when `features` or `markdown` is on, handed
    down by the layers above (launch, the library's face: index/stages.py builds it), since crawl/
    never imports index/. Module-level functions and classes: it pickles into a spawned worker."""

    featurer: PageFeaturer | None = None  # `features`: a page's features, before the sinks see it
    features_sink: SinkFactory | None = None  # `features`: stores them
    markdown_sink: Callable[[int], PageSink] | None = None  # `markdown`: its sink, made with a chunk size

    def for_config(self, config: CrawlConfig) -> tuple[PageFeaturer | None, tuple[SinkFactory, ...]]:
        """The featurer and sinks `config` asks for; a stage it asks for and was not given is refused."""
        featurer: PageFeaturer | None = None
        factories: tuple[SinkFactory, ...] = ()
        if config.features:
            if self.featurer is None or self.features_sink is None:
                raise ConfigError(_MISSING.format("features"))
            featurer, factories = self.featurer, (self.features_sink,)
        if config.markdown:
            if self.markdown_sink is None:
                raise ConfigError(_MISSING.format("markdown"))
            # A partial of a module-level class: it pickles into a spawned worker.
            factories += (functools.partial(self.markdown_sink, config.markdown_chunk_size),)
        return featurer, factories


NO_STAGES = PageStages()
_MISSING = ("{} is on, but the crawl was given no stage for it: build the crawl with the index layer's "
            "page stages (index/stages.py page_stages, as harvestman.Crawler and the command line do)")


class SinkPipeline:
    """The sinks of one process's run, opened together and closed together."""

    def __init__(self, factories: Sequence[SinkFactory], context: SinkContext) -> None:
        self._sinks: list[PageSink] = []
        try:
            for make in factories:
                sink = make()
                sink.open(context)
                self._sinks.append(sink)
        except BaseException:
            self.close()
            raise

    def __bool__(self) -> bool:
        return bool(self._sinks)

    def write(self, page: CrawledPage) -> None:
        """Hand `page` to every sink, in order."""
        for sink in self._sinks:
            sink.write(page)

    def close(self) -> None:
        """Close every opened sink (the rest too, when one fails), then raise the first failure."""
        first: BaseException | None = None
        for sink in self._sinks:
            try:
                sink.close()
            except BaseException as exc:  # every sink gets its close; the first error is reported
                first = first or exc
        self._sinks = []
        if first is not None:
            raise first
