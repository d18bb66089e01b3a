"""harvestman: a polite, resumable, fast web crawler."""

from typing import TYPE_CHECKING, Any

from harvestman.crawl.download import download
from harvestman.crawl.engine import Crawler
from harvestman.crawl.job import CrawlJob, JobState, JobStatus
from harvestman.crawl.sinks import PageSink, SinkContext
from harvestman.model.config import CrawlConfig
from harvestman.model.core import core_name
from harvestman.model.errors import HarvestmanError
from harvestman.model.events import Event, EventKind
from harvestman.model.records import CrawledPage, FetchResult, UrlState

if TYPE_CHECKING:
    from harvestman.index.search import search

__version__ = "0.1.0"
__all__ = [
    "CrawlConfig",
    "CrawlJob",
    "CrawledPage",
    "Crawler",
    "Event",
    "EventKind",
    "FetchResult",
    "HarvestmanError",
    "JobState",
    "JobStatus",
    "PageSink",
    "SinkContext",
    "UrlState",
    "__version__",
    "core_name",
    "download",
    "search",
]


def __getattr__(name: str) -> Any:
    # search brings tantivy: loaded on first use, so that `import harvestman` stays cheap.
    if name == "search":
        from harvestman.index.search import search

        return search
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
