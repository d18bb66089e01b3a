"""harvestman: a polite, resumable, fast web crawler."""

from typing import TYPE_CHECKING, Any

from harvestman.crawl import engine, job
from harvestman.crawl.download import download
from harvestman.crawl.job import JobState, JobStatus
from harvestman.crawl.sinks import NO_STAGES, PageSink, SinkContext
from harvestman.crawl.workers import NO_POLICIES, Policies
from harvestman.index.stages import page_stages, with_stages
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


class Crawler(engine.Crawler):
    """A crawl (harvestman.crawl.engine.Crawler: the same options) run with the index layer's page
    stages its settings ask for (`features`, `markdown`)."""

    def __init__(self, config: CrawlConfig, **options: Any) -> None:
        if options.get("parts") is None and options.get("stages", NO_STAGES) == NO_STAGES:
            options["stages"] = page_stages(config)
        super().__init__(config, **options)


class CrawlJob(job.CrawlJob):
    """A crawl job (harvestman.crawl.job.CrawlJob: the same options) whose every process runs with
    the index layer's page stages its settings ask for (`features`, `markdown`)."""

    def __init__(self, config: CrawlConfig, *, policies: Policies = NO_POLICIES, **options: Any) -> None:
        super().__init__(config, policies=with_stages(policies, config), **options)


def __getattr__(name: str) -> Any:
    # search brings tantivy: loaded on first use, so that `import harvestman` stays cheap.
    if name == "search":
        from harvestman.index.search import search

        return search
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
