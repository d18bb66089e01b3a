"""The index layer's page stages a crawl runs with (`features`, `markdown`), built by the layers above
crawl/ (the command line's run layer, the library's face) and handed down to the crawl's assembly.

Cheap to import: the stages' modules (Parquet, the Markdown converter) load only when a crawl asks
for one of them.
"""

from __future__ import annotations

import dataclasses

from harvestman.crawl.sinks import NO_STAGES, PageStages
from harvestman.crawl.workers import Policies
from harvestman.model.config import CrawlConfig


def page_stages(config: CrawlConfig) -> PageStages:
    """The page stages a crawl with these settings needs (none when `features` and `markdown` are off)."""
    if not (config.features or config.markdown):
        return NO_STAGES
    from harvestman.index.markdown_sink import MarkdownSink
    from harvestman.index.sink import FeatureSink, page_features

    return PageStages(page_features, FeatureSink, MarkdownSink)


def with_stages(policies: Policies, config: CrawlConfig) -> Policies:
    """`policies` with the page stages `config` asks for, unless they name their own."""
    if policies.stages != NO_STAGES:
        return policies
    return dataclasses.replace(policies, stages=page_stages(config))
