"""The page step alone: from a leased URL, its fetch result and its parse to a plan, with no network,
no event loop and no clock (crawl/page_step.py), and the rules crawl/assembly.py composes into it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from harvestman.crawl.assembly import page_step
from harvestman.crawl.context import NO_SLOTS, PageContext
from harvestman.crawl.page_step import Draft, Fetched, PageStep, Scores, Ticket, Withheld
from harvestman.crawl.recrawl import Checked
from harvestman.crawl.sitemap_queue import SitemapQueue
from harvestman.crawl.steps import LinkParse
from harvestman.model.config import CrawlConfig
from harvestman.model.records import CrawledPage, FetchResult, LeasedUrl, Link, UrlState
from harvestman.net.hostkeys import HostKeys
from harvestman.policy.schedule import FetchSchedule
from harvestman.policy.scope import Scope

NOW = 1_800_000_000.0
NO_CHECKS = Ticket()
SEED = "http://a.test/"
PAGE = (b"<html><head><title>Home</title></head><body>"
        b"<a href='/one'>one</a> <a href='/two'>two</a> <a href='http://b.test/x'>out</a></body></html>")


def config(**options: Any) -> CrawlConfig:
    return CrawlConfig(seeds=[SEED], out_dir="unused", **options)


def step(cfg: CrawlConfig, **parts: Any) -> PageStep:
    return page_step(cfg, HostKeys("host"), **parts)


def fetched(cfg: CrawlConfig, *, status: int = 200, body: bytes = PAGE, depth: int = 0, score: float = 0.0,
            ticket: Ticket = NO_CHECKS, **result: Any) -> Fetched:
    """A fetched page as the crawl's parse leaves it (parsed, its links normalized and in scope)."""
    leased = LeasedUrl(SEED, "a.test", depth, 0, NOW + 300, score=score)
    fetch = FetchResult(url=SEED, final_url=SEED, status=status, content_type="text/html",
                        text=body.decode(), body=body, wire_bytes=len(body) + 100, **result)
    parse = LinkParse(cfg.links, Scope([SEED]), {}, with_text=False, sitemaps=SitemapQueue(10),
                      parsers={}, refine=None)
    return parse(leased, fetch, ticket)


def test_a_page_is_decided_its_new_links_queued_one_hop_deeper_and_stored() -> None:
    cfg = config()
    plan = step(cfg).plan(fetched(cfg), known=set(), now=NOW)
    assert plan.decision.outcome.state == UrlState.FETCHED and plan.decision.final
    assert plan.decision.outcome.title == "Home"  # from the parse the links needed anyway
    assert plan.decision.outcome.fetch_time == NOW  # the time given, no clock read
    assert [(u.url, u.host, u.depth, u.parent, u.priority) for u in plan.new_urls] == [
        ("http://a.test/one", "a.test", 1, SEED, 1.0), ("http://a.test/two", "a.test", 1, SEED, 1.0)]
    assert plan.fresh == ["http://a.test/one", "http://a.test/two"]
    assert plan.links is not None and len(plan.links.links) == 3  # the graph keeps the link out of scope
    assert plan.store and plan.deliver and plan.wire_bytes == len(PAGE) + 100


def test_the_plan_is_the_same_for_the_same_inputs() -> None:
    cfg = config()
    page = fetched(cfg)
    assert step(cfg).plan(page, set(), NOW) == step(cfg).plan(page, set(), NOW)


def test_links_this_process_has_queued_already_are_not_sent_again() -> None:
    cfg = config()
    plan = step(cfg).plan(fetched(cfg), known={"http://a.test/one"}, now=NOW)
    assert [u.url for u in plan.new_urls] == ["http://a.test/two"] and plan.fresh == ["http://a.test/two"]


def test_a_retried_fetch_is_stored_in_the_warc_but_not_handed_on() -> None:
    cfg = config(retries=2)
    plan = step(cfg).plan(fetched(cfg, status=503, body=b"busy"), set(), NOW)
    assert not plan.decision.final and plan.decision.outcome.next_fetch_time > NOW
    assert plan.store and not plan.deliver and not plan.new_urls and plan.links is None


def test_no_response_is_neither_stored_nor_handed_on() -> None:
    cfg = config(retries=0)
    page = fetched(cfg, status=0, body=b"", error_class="timeout", error_message="deadline")
    plan = step(cfg).plan(page, set(), NOW)
    assert plan.decision.outcome.state == UrlState.GONE and not plan.store and not plan.deliver


def test_opic_splits_the_page_score_over_its_links() -> None:
    cfg = config(ordering="opic")
    plan = step(cfg).plan(fetched(cfg, score=2.0), set(), NOW)
    assert {u.url: u.score for u in plan.new_urls} == {"http://a.test/one": 1.0, "http://a.test/two": 1.0}


def test_a_scorer_orders_the_new_links() -> None:
    cfg = config(ordering="score")

    def scorer(page: CrawledPage, link: Link) -> float:
        return 5.0 if link.url.endswith("two") else 1.0

    plan = step(cfg, scorer=scorer).plan(fetched(cfg), set(), NOW)
    by_url = {u.url: u for u in plan.new_urls}
    assert by_url["http://a.test/two"].score == 5.0 and by_url["http://a.test/one"].score == 1.0
    assert by_url["http://a.test/two"].priority < by_url["http://a.test/one"].priority  # best first


def test_a_schedule_sets_the_next_visit() -> None:
    cfg = config()

    def daily(outcome: Any, leased: LeasedUrl) -> float:
        return float(outcome.fetch_time + 86_400)

    schedule: FetchSchedule = daily
    plan = step(cfg, schedule=schedule).plan(fetched(cfg), set(), NOW)
    assert plan.decision.outcome.next_fetch_time == NOW + 86_400
    assert plan.decision.outcome.fetch_interval == 86_400


def test_a_recrawl_does_not_store_a_page_that_did_not_change() -> None:
    cfg = config()
    ticket = Ticket(context=NO_SLOTS.with_slots(Checked("conditional")))
    plan = step(cfg, recrawl=True).plan(fetched(cfg, status=304, body=b"", ticket=ticket), set(), NOW)
    outcome = plan.decision.outcome
    assert outcome.state == UrlState.NOT_MODIFIED and outcome.checked_by == "conditional"
    assert not plan.store and plan.deliver


def test_a_crawl_that_follows_no_links_queues_none() -> None:
    cfg = config(follow_links=False)
    page = Fetched(LeasedUrl(SEED, "a.test", 0, 0, NOW), FetchResult(SEED, SEED, status=200, body=PAGE),
                   Ticket(), None, {}, {})
    plan = step(cfg).plan(page, set(), NOW)
    assert plan.new_urls == [] and plan.links is None and plan.store and plan.deliver


# ----- the page's context: slots one step adds and a later one reads ------------------------------


@dataclass(frozen=True, slots=True)
class Seen:
    """A slot of a test's own type."""

    by: str


def test_a_context_reads_a_slot_by_its_type_and_none_where_no_step_added_one() -> None:
    ctx = NO_SLOTS.with_slots(Seen("gate"), Checked("size"))
    assert ctx.get(Seen) == Seen("gate") and ctx.get(Checked) == Checked("size")
    assert NO_SLOTS.get(Seen) is None and ctx.get(PageContext) is None
    assert ctx.with_slots(Seen("rule")).get(Seen) == Seen("rule")  # a slot of the same type replaced
    assert ctx.get(Seen) == Seen("gate")  # and the context it came from unchanged


def test_a_slot_a_gate_or_rule_adds_is_read_by_a_later_rule_of_the_page_step() -> None:
    cfg = config(ordering="score")
    read: list[Seen | None] = []

    def rule(page: Fetched, draft: Draft) -> Draft:  # reads the gate's slot, adds its own
        read.append(draft.context.get(Seen))
        added = draft.context.with_slots(Seen("rule"), Withheld(page=True, links=False))
        return replace(draft, context=added)

    def link_rule(page: Fetched, draft: Draft, fresh: Sequence[str], scores: Scores | None) -> Scores:
        read.append(draft.context.get(Seen))
        return {url: 2.0 for url in fresh}

    base = step(cfg)
    composed = PageStep(base.politeness, base.queueing, (rule,), (link_rule,))
    plan = composed.plan(fetched(cfg, ticket=Ticket(context=NO_SLOTS.with_slots(Seen("gate")))), set(), NOW)
    assert read == [Seen("gate"), Seen("rule")]
    assert [u.score for u in plan.new_urls] == [2.0, 2.0]  # the links go on; the page is withheld
    assert not plan.store and not plan.deliver


def test_a_rule_withholding_the_links_queues_none() -> None:
    cfg = config()

    def rule(page: Fetched, draft: Draft) -> Draft:
        return replace(draft, context=draft.context.with_slots(Withheld(page=False, links=True)))

    base = step(cfg)
    plan = PageStep(base.politeness, base.queueing, (rule,)).plan(fetched(cfg), set(), NOW)
    assert plan.new_urls == [] and plan.fresh == [] and plan.store and plan.deliver
