"""Firecrawl's v1 API on `harvestman serve`: /v1/scrape, /v1/crawl (start, status and results,
cancel) and /v1/map, in Firecrawl's shapes (`serve/fcshapes.py`), behind the server's token.

What these endpoints may reach is the server's to say: its network ceiling (serve/ceiling.py: `serve
--allow-net --only-net --resolve --proxy`, nothing private or loopback by default), judged by the same
address guard as every crawl, on every hop, robots.txt and sitemaps included.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from harvestman.crawl.download import download
from harvestman.crawl.parse import parse_html
from harvestman.crawl.sitemaps import parse_sitemap
from harvestman.index.pages import html_text
from harvestman.model.errors import ConfigError, HarvestmanError
from harvestman.model.records import FetchResult
from harvestman.net.urls import registered_domain
from harvestman.policy.robots import RobotsRules
from harvestman.serve.auth import Auth
from harvestman.serve.ceiling import CeilingError
from harvestman.serve.crawls import CrawlManager, UnknownCrawl
from harvestman.serve.fcshapes import (
    MapRequest,
    PageSource,
    ScrapeOptions,
    ShapeError,
    crawl_request,
    crawl_status,
    document,
    expires_at,
    failure,
    map_request,
    scrape_options,
    scrape_url,
)
from harvestman.serve.settings import check_settings
from harvestman.serve.status import open_db
from harvestman.store.warc_read import read_response, stored_responses

PAGE_SIZE = 100  # documents in one GET /v1/crawl/ID answer; `next` points at the rest
OPTIONS_FILE = "firecrawl.json"  # a crawl's scrapeOptions, beside its serve.json
MAX_SITEMAPS = 10  # sitemaps read by one /v1/map (robots.txt's, /sitemap.xml, and their children)
SCRAPE_TIMEOUT = 60.0
# Refusals by the server's network rules or the site's robots.txt: a 403, not a failed fetch.
REFUSALS = frozenset({"blocked_address", "outside_net", "robots"})


def _answer(status: int, body: dict[str, Any]) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def _failed(exc: HarvestmanError) -> JSONResponse:
    """A HarvestmanError as Firecrawl's error body and status."""
    if isinstance(exc, UnknownCrawl):
        return _answer(404, failure("Crawl job not found"))
    if isinstance(exc, CeilingError):
        return _answer(403, failure(str(exc)))
    if isinstance(exc, ConfigError):
        return _answer(400, failure(str(exc)))
    return _answer(500, failure(str(exc)))


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        raise ShapeError("the body must be JSON") from None


class Firecrawl:
    """The /v1 routes' work: fetches with the server's network rules, crawls through the manager."""

    def __init__(self, manager: CrawlManager) -> None:
        self.manager = manager

    def fetch(self, urls: list[str], headers: tuple[tuple[str, str], ...] = ()) -> list[FetchResult]:
        """Each URL fetched once (robots.txt obeyed), under the server's network rules."""
        extra: dict[str, Any] = {"extra_headers": dict(headers)} if headers else {}
        return list(download(urls, concurrency=8, retries=1, timeout=SCRAPE_TIMEOUT,
                             **self.manager.ceiling.network({}), **extra))

    def scrape(self, url: str, options: ScrapeOptions) -> tuple[int, dict[str, Any]]:
        """POST /v1/scrape: the page now, as a Firecrawl document."""
        (result,) = self.fetch([url], options.headers)
        if result.error:
            status = 403 if result.error_class in REFUSALS else 502
            return status, failure(f"could not fetch {url}: {result.error_class}: {result.error_message}")
        page = PageSource(url=result.final_url, source_url=url, status=result.status,
                          content_type=result.content_type, text=result.text or "")
        return 200, {"success": True, "data": document(page, options)}

    def start_crawl(self, body: Any, base: str) -> dict[str, Any]:
        """POST /v1/crawl: a harvestman crawl of the URL, its id and where its status is."""
        url, settings, options = crawl_request(body)
        seeds, checked = check_settings([url], settings)
        crawl_id = self.manager.create(seeds, checked)
        (self.manager.paths(crawl_id).folder / OPTIONS_FILE).write_text(json.dumps(options.as_json()))
        return {"success": True, "id": crawl_id, "url": f"{base}v1/crawl/{crawl_id}"}

    def crawl_status(self, crawl_id: str, skip: int, base: str) -> dict[str, Any]:
        """GET /v1/crawl/ID: the crawl's status and a page of its documents from `skip` on."""
        info = self.manager.info(crawl_id)
        options = _stored_options(info.paths.folder)
        counts: dict[str, int] = {}
        try:
            db = open_db(info)
        except HarvestmanError:  # the crawl is making its database: nothing counted yet
            db = None
        if db is not None:
            try:
                counts = {state.name.lower(): n for state, n in db.counts().items()}
            finally:
                db.close()
        found = list(stored_responses(info.paths.crawl_dir, latest=True, open_files=True, bodies=False))
        found = [r for r in found if urlsplit(r.url).path != "/robots.txt"]
        shown = found[skip:skip + PAGE_SIZE]
        out: dict[str, Any] = {
            "success": True,
            "status": crawl_status(info.state),
            "completed": len(found),
            "total": max(len(found), sum(counts.values())),
            "creditsUsed": len(found),
            "expiresAt": expires_at(info.created),
            "data": [document(_stored_page(r.file, r.offset), options) for r in shown],
        }
        if skip + PAGE_SIZE < len(found):
            out["next"] = f"{base}v1/crawl/{crawl_id}?skip={skip + PAGE_SIZE}"
        if info.state == "failed" and info.message:
            out["error"] = info.message
        return out

    def map(self, asked: MapRequest) -> dict[str, Any]:
        """POST /v1/map: the site's URLs from its sitemaps and the page's links."""
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(asked.url))
        found: list[str] = []
        if asked.use_sitemap or asked.sitemap_only:
            found += self._sitemap_urls(origin)
        if not asked.sitemap_only:
            (page,) = self.fetch([asked.url])
            if page.error:
                if not found:
                    raise ConfigError(f"could not fetch {asked.url}: {page.error_class}: "
                                      f"{page.error_message}")
            elif page.text is not None:
                found += [link.url for link in parse_html(page.text, page.final_url, with_text=False).links]
        links = [u for u in dict.fromkeys([asked.url, *found]) if _same_site(u, asked.url, asked.subdomains)]
        if asked.search:
            words = asked.search.lower().split()
            links = sorted((u for u in links if any(w in u.lower() for w in words)),
                           key=lambda u: -sum(w in u.lower() for w in words))
        return {"success": True, "links": links[: asked.limit]}

    def _sitemap_urls(self, origin: str) -> list[str]:
        """The page URLs the site's sitemaps list: those robots.txt names, else /sitemap.xml, and
        the children of sitemap indexes, MAX_SITEMAPS read at most."""
        (robots,) = self.fetch([f"{origin}/robots.txt"])
        named = list(RobotsRules.parse(robots.body).sitemaps) if robots.ok else []
        todo, done, pages = named or [f"{origin}/sitemap.xml"], 0, []
        while todo and done < MAX_SITEMAPS:
            batch, todo = todo[: MAX_SITEMAPS - done], todo[MAX_SITEMAPS - done:]
            for result in self.fetch(batch):
                done += 1
                if not result.ok:
                    continue
                sitemap = parse_sitemap(result.body, result.final_url)
                todo += [entry.url for entry in sitemap.sitemaps]
                pages += [entry.url for entry in sitemap.pages]
        return pages


def _same_site(url: str, start: str, subdomains: bool) -> bool:
    host, start_host = urlsplit(url).hostname or "", urlsplit(start).hostname or ""
    if host == start_host:
        return True
    return subdomains and registered_domain(host) == registered_domain(start_host)


def _stored_options(folder: Path) -> ScrapeOptions:
    """The scrapeOptions a crawl was started with (the default for crawls started through /api)."""
    try:
        return scrape_options(json.loads((folder / OPTIONS_FILE).read_text()), keys=frozenset(
            {"formats", "onlyMainContent", "headers"}))
    except (OSError, ValueError):
        return ScrapeOptions()


def _stored_page(path: Path, offset: int) -> PageSource:
    record = read_response(path, offset)
    return PageSource(
        url=record.url, source_url=record.requested_url or record.url, status=record.status,
        content_type=record.content_type, text=html_text(record.body or b"", record.content_type),
        fetched=record.date, record_id=record.record_id, warc_file=record.file.name, offset=record.offset,
    )


def _base(request: Request) -> str:
    return str(request.base_url)


def firecrawl_router(work: Firecrawl, auth: Auth) -> APIRouter:
    """The /v1 routes, each behind `auth` (Firecrawl's clients send the server's token as their API key)."""
    router = APIRouter(prefix="/v1", dependencies=[Depends(auth)], include_in_schema=True,
                       tags=["Firecrawl v1"])

    def run(call: Any, *args: Any) -> JSONResponse:
        try:
            answer = call(*args)
        except HarvestmanError as exc:
            return _failed(exc)
        except Exception as exc:  # a bug of ours: said in Firecrawl's shape, the traceback in the log
            logging.getLogger(__name__).exception("firecrawl route failed")
            return _answer(500, failure(f"internal error: {type(exc).__name__}: {exc}"))
        if isinstance(answer, tuple):
            return _answer(*answer)
        return _answer(200, answer)

    @router.post("/scrape")
    async def scrape(request: Request) -> JSONResponse:
        try:
            body = await _json(request)
            url, options = scrape_url(body), scrape_options(body)
        except HarvestmanError as exc:
            return _failed(exc)
        return await run_in_threadpool(run, work.scrape, url, options)

    @router.post("/crawl")
    async def start_crawl(request: Request) -> JSONResponse:
        try:
            body = await _json(request)
        except HarvestmanError as exc:
            return _failed(exc)
        return await run_in_threadpool(run, work.start_crawl, body, _base(request))

    @router.get("/crawl/{crawl_id}")
    def crawl_status_route(crawl_id: str, request: Request, skip: int = 0) -> JSONResponse:
        if skip < 0:
            return _answer(400, failure("skip: must be 0 or more"))
        return run(work.crawl_status, crawl_id, skip, _base(request))

    @router.delete("/crawl/{crawl_id}")
    def cancel_crawl(crawl_id: str) -> JSONResponse:
        def cancel() -> dict[str, Any]:
            work.manager.stop(crawl_id)
            return {"success": True, "status": "cancelled"}

        return run(cancel)

    @router.post("/map")
    async def map_route(request: Request) -> JSONResponse:
        try:
            asked = map_request(await _json(request))
        except HarvestmanError as exc:
            return _failed(exc)
        return await run_in_threadpool(run, work.map, asked)

    return router

