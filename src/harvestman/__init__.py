"""harvestman: a polite, resumable, fast web crawler."""

from harvestman.config import CrawlConfig
from harvestman.download import download
from harvestman.engine import Crawler
from harvestman.errors import HarvestmanError
from harvestman.events import Event, EventKind
from harvestman.records import CrawledPage, FetchResult, UrlState

__version__ = "0.1.0"
__all__ = [
    "CrawlConfig",
    "CrawledPage",
    "Crawler",
    "Event",
    "EventKind",
    "FetchResult",
    "HarvestmanError",
    "UrlState",
    "__version__",
    "download",
]
