"""Firecrawl's API on `harvestman serve`: the work of its routes (v1's and v2's alike), and v1's routes
(/v1/scrape, /v1/crawl: start, status and results, cancel; /v1/map) in Firecrawl's shapes
(`serve/fcshapes.py`), behind the server's token; v2's routes: serve/firecrawl2.py.

What these endpoints may reach is the server's to say: its network ceiling (serve/ceiling.py: `serve
--allow-net --only-net --resolve --proxy`, nothing private or loopback by default), judged by the same
address guard as every crawl, on every hop, robots.txt and sitemaps included.
"""

from __future__ import annotations

import html
import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from harvestman.crawl.download import download
from harvestman.index.pages import html_text
from harvestman.model.errors import ConfigError, HarvestmanError, QueryError
from harvestman.model.records import FetchResult, UrlState
from harvestman.serve.auth import Auth
from harvestman.serve.ceiling import CeilingError
from harvestman.serve.crawls import RUNNING_STATES, CrawlInfo, CrawlManager, UnknownCrawl
from harvestman.serve.fcmap import SiteMapper
from harvestman.serve.fcshapes import (
    BatchRequest,
    CrawlRequest,
    MapRequest,
    PageSource,
    ScrapeOptions,
    SearchRequest,
    ShapeError,
    crawl_request,
    crawl_status,
    document,
    expires_at,
    failure,
    fetch_failure,
    map_request,
    scrape_options,
    scrape_url,
    stored_scrape_options,
    warning,
)
from harvestman.serve.pages import PageNotFound, WarcLookup
from harvestman.serve.search import Searcher
from harvestman.serve.settings import check_settings
from harvestman.serve.status import open_db
from harvestman.store.frontier import CrawlDb
from harvestman.store.warc_read import read_response, stored_responses

PAGE_SIZE = 100  # documents in one crawl status answer; `next` points at the rest
JOB_FILE = "firecrawl.json"  # beside serve.json: a Firecrawl job's page options, limit, warnings
SCRAPE_TIMEOUT = 60.0
_TAGS = re.compile(r"<[^>]+>")


def _answer(status: int, body: dict[str, Any]) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def failed(exc: HarvestmanError) -> JSONResponse:
    """A HarvestmanError as Firecrawl's error body and status."""
    if isinstance(exc, UnknownCrawl):
        return _answer(404, failure("Job not found", "NOT_FOUND"))
    if isinstance(exc, CeilingError):
        return _answer(403, failure(str(exc), "FORBIDDEN"))
    if isinstance(exc, ConfigError | QueryError):
        return _answer(400, failure(str(exc)))
    return _answer(500, failure(str(exc), "UNKNOWN_ERROR"))


async def request_json(request: Request) -> Any:
    """The request's body as JSON; ShapeError when it is not."""
    try:
        return await request.json()
    except ValueError:
        raise ShapeError("the body must be JSON") from None


def answered(call: Callable[..., Any], *args: Any) -> JSONResponse:
    """`call(*args)` as Firecrawl's answer: its body (or status and body), or its error."""
    try:
        answer = call(*args)
    except HarvestmanError as exc:
        return failed(exc)
    except Exception as exc:  # a bug of ours: said in Firecrawl's shape, the traceback in the log
        logging.getLogger(__name__).exception("firecrawl route failed")
        return _answer(500, failure(f"internal error: {type(exc).__name__}: {exc}", "UNKNOWN_ERROR"))
    if isinstance(answer, tuple):
        return _answer(*answer)
    return _answer(200, answer)


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")


class Firecrawl:
    """The work of the Firecrawl-shaped routes, v1's and v2's alike: fetches and crawls under the
    server's network rules (the ceiling: `fetching` here, the crawl manager for crawls), crawls and batch
    scrapes through the crawl manager, search over the crawls' own indexes."""

    def __init__(self, manager: CrawlManager, searcher: Searcher | None = None,
                 pages: WarcLookup | None = None) -> None:
        self.manager = manager
        self.searcher = searcher or Searcher()
        self.pages = pages or WarcLookup()
        self.mapper = SiteMapper(lambda urls, timeout: self.fetching(urls, timeout=timeout), manager)

    def fetching(self, urls: list[str], **settings: Any) -> Iterator[FetchResult]:
        """Each URL fetched once (robots.txt obeyed), as the fetches complete, under the server's
        network rules (its ceiling, serve/ceiling.py: a request's shapes have no name for them);
        stopping the iteration stops them."""
        settings.setdefault("timeout", SCRAPE_TIMEOUT)
        return iter(download(urls, concurrency=8, retries=1, **settings, **self.manager.ceiling.network({})))

    def scrape(self, url: str, options: ScrapeOptions) -> tuple[int, dict[str, Any]]:
        """POST /v1/scrape, /v2/scrape: the page now, as a Firecrawl document."""
        (result,) = self.fetching([url], **options.fetch_settings())
        if result.error:
            return fetch_failure(url, result.error_class, result.error_message)
        page = PageSource(url=result.final_url, source_url=url, status=result.status,
                          content_type=result.content_type, text=result.text or "")
        doc = {**document(page, options), **warning(options.warnings)}
        return 200, {"success": True, "data": doc, **warning(options.warnings)}

    def _start(self, seeds: list[str], settings: dict[str, Any], options: ScrapeOptions, limit: int,
               warnings: tuple[str, ...]) -> str:
        """A crawl started under the server's rules, with what its status answers need kept beside it."""
        seeds, checked = check_settings(seeds, settings)  # the manager bounds it by the ceiling
        crawl_id = self.manager.create(seeds, checked)
        kept = {"scrapeOptions": options.as_json(), "limit": limit, "warnings": list(warnings)}
        (self.manager.paths(crawl_id).folder / JOB_FILE).write_text(json.dumps(kept))
        return crawl_id

    def start_crawl(self, asked: CrawlRequest, where: str) -> dict[str, Any]:
        """POST /v1/crawl, /v2/crawl: a harvestman crawl of the URL, its id and `where` + id."""
        crawl_id = self._start([asked.url], asked.settings, asked.options, asked.settings["max_pages"],
                               asked.warnings)
        return {"success": True, "id": crawl_id, "url": f"{where}{crawl_id}", **warning(asked.warnings)}

    def start_batch(self, asked: BatchRequest, where: str) -> dict[str, Any]:
        """POST /v2/batch/scrape: a crawl of the URLs alone (no link followed)."""
        crawl_id = self._start(list(asked.urls), asked.settings, asked.options, len(asked.urls),
                               asked.options.warnings)
        return {"success": True, "id": crawl_id, "url": f"{where}{crawl_id}",
                "invalidURLs": list(asked.invalid), **warning(asked.options.warnings)}

    def job_status(self, crawl_id: str, skip: int, next_url: Callable[[int], str],
                   page_size: int = PAGE_SIZE) -> dict[str, Any]:
        """A crawl's (or batch's) status and `page_size` of its documents from `skip` on; `next_url(n)`
        names the page from n on. `total` counts what the crawl will have fetched when it ends
        (within its `limit`), `completed` the documents stored."""
        info = self.manager.info(crawl_id)
        kept = _kept(info.paths.folder)
        counts: dict[UrlState, int] = {}
        db = _db_or_none(info)
        if db is not None:
            try:
                counts = db.counts()
            finally:
                db.close()
        found = list(stored_responses(info.paths.crawl_dir, latest=True, open_files=True, bodies=False))
        found = [r for r in found if urlsplit(r.url).path != "/robots.txt"]
        running = info.state in RUNNING_STATES
        # While running, every URL known may still be fetched; once ended, those fetched or failed.
        known = sum(counts.values()) if running else len(found) + counts.get(UrlState.GONE, 0)
        limit = int(kept.get("limit") or info.settings.get("max_pages") or 0)
        total = max(len(found), min(known, limit) if limit else known)
        shown = found[skip:skip + min(page_size, PAGE_SIZE)]
        options = stored_scrape_options(kept.get("scrapeOptions", kept))
        out: dict[str, Any] = {
            "success": True,
            "status": crawl_status(info.state),
            "completed": len(found),
            "total": total,
            "creditsUsed": len(found),
            "expiresAt": expires_at(info.created),
            "data": [document(_stored_page(r.file, r.offset), options) for r in shown],
            **warning(kept.get("warnings", [])),
        }
        upto = skip + len(shown)
        if upto < len(found) or (running and upto < total):
            out["next"] = next_url(upto)
        if info.state == "failed" and info.message:
            out["error"] = info.message
        return out

    def job_errors(self, crawl_id: str) -> dict[str, Any]:
        """GET /v2/crawl/ID/errors: the URLs that failed, and those robots.txt kept out."""
        db = _db_or_none(self.manager.info(crawl_id))
        errors: list[dict[str, Any]] = []
        robots: list[str] = []
        if db is not None:
            try:
                for record in db.records():
                    if record.state != UrlState.GONE:
                        continue
                    if record.error_class == "robots":
                        robots.append(record.url)
                        continue
                    said = f"{record.error_class}: {record.error_message}" if record.error_class else (
                        f"HTTP {record.http_status}")
                    errors.append({"id": f"{crawl_id}-{len(errors)}", "url": record.url, "error": said,
                                   "code": record.error_class or f"HTTP_{record.http_status}",
                                   **({"timestamp": _iso(record.fetch_time)} if record.fetch_time else {})})
            finally:
                db.close()
        return {"success": True, "errors": errors, "robotsBlocked": robots}

    def cancel(self, crawl_id: str, *, ended_is_conflict: bool) -> tuple[int, dict[str, Any]]:
        """DELETE a crawl or batch: it stops as POST /api/crawls/ID/stop stops it. One that has
        ended already is a 409 where the version says so (v2: the client reads it as "not cancelled")."""
        if self.manager.info(crawl_id).state not in RUNNING_STATES and ended_is_conflict:
            return 409, failure("the job has ended already", "JOB_ENDED")
        self.manager.stop(crawl_id)
        return 200, {"success": True, "status": "cancelled"}

    def map(self, asked: MapRequest) -> list[dict[str, str]]:
        """The site's URLs (sitemaps, pages crawled here, a discovery crawl) as v2's link objects."""
        return [entry.as_json() for entry in self.mapper.map(asked)]

    def search(self, asked: SearchRequest) -> dict[str, Any]:
        """POST /v2/search: the best pages of every crawl's full-text index for the query."""
        deadline = time.monotonic() + asked.timeout if asked.timeout else None
        warnings = list(asked.warnings)
        hits: list[tuple[float, str, dict[str, Any]]] = []
        ids = self.manager.ids()
        for n, crawl_id in enumerate(ids):
            if deadline is not None and time.monotonic() > deadline:
                warnings.append(f"timeout: {len(ids) - n} of {len(ids)} crawls not searched in time")
                break
            try:
                info = self.manager.info(crawl_id)
                db = _db_or_none(info)
                if db is None:  # nothing fetched yet
                    continue
                db.close()
                found = self.searcher.search(info, asked.query, asked.limit)
            except QueryError:
                raise
            except HarvestmanError as exc:  # one crawl's index that cannot be read: the others still
                warnings.append(f"crawl {crawl_id} not searched: {exc}")
                continue
            hits += [(h["score"], crawl_id, h) for h in found["hits"]]
        web: list[dict[str, Any]] = []
        seen: set[str] = set()
        for _, crawl_id, hit in sorted(hits, key=lambda h: -h[0]):
            if hit["url"] in seen or len(web) >= asked.limit:
                continue
            seen.add(hit["url"])
            result = {"url": hit["url"], "title": hit["title"],
                      "description": html.unescape(_TAGS.sub("", hit["snippet_html"]))}
            if asked.options is not None:
                result.update(self._stored_document(crawl_id, hit["url"], asked.options))
            web.append(result)
        return {"success": True, "data": {"web": web}, "creditsUsed": len(web), **warning(warnings)}

    def _stored_document(self, crawl_id: str, url: str, options: ScrapeOptions) -> dict[str, Any]:
        try:
            page = self.pages.find(self.manager.paths(crawl_id).crawl_dir, url)
        except PageNotFound:
            return {}
        source = PageSource(url=page.url, source_url=url, status=page.status,
                            content_type=page.content_type, text=html_text(page.body, page.content_type))
        return document(source, options)


def _db_or_none(info: CrawlInfo) -> CrawlDb | None:
    """The crawl's database opened for reading; None before the crawl has made it."""
    try:
        return open_db(info)
    except HarvestmanError:  # the crawl is making its database: nothing counted yet
        return None


def _kept(folder: Path) -> dict[str, Any]:
    """What a Firecrawl crawl keeps beside it (nothing for crawls started through /api)."""
    try:
        kept = json.loads((folder / JOB_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _stored_page(path: Path, offset: int) -> PageSource:
    record = read_response(path, offset)
    return PageSource(
        url=record.url, source_url=record.requested_url or record.url, status=record.status,
        content_type=record.content_type, text=html_text(record.body or b"", record.content_type),
        fetched=record.date, record_id=record.record_id, warc_file=record.file.name, offset=record.offset,
    )


async def posted(request: Request, parse: Callable[[Any], Any], call: Callable[..., Any],
                 *args: Any) -> JSONResponse:
    """A POST route's work: the body read and checked by `parse`, then `call(parsed, *args)`, off the
    event loop (it fetches, or reads files)."""
    try:
        body = await request_json(request)
    except HarvestmanError as exc:
        return failed(exc)
    return await run_in_threadpool(answered, lambda: call(parse(body), *args))


def versioned_router(version: str, work: Firecrawl, auth: Auth) -> APIRouter:
    """A Firecrawl API version's router (`/v1`, `/v2`), each route behind `auth` (Firecrawl's clients
    send the server's token as their API key), with the routes both versions declare alike: starting
    a scrape and a crawl."""
    router = APIRouter(prefix=f"/{version}", dependencies=[Depends(auth)], tags=[f"Firecrawl {version}"])

    @router.post("/scrape")
    async def scrape(request: Request) -> JSONResponse:
        return await posted(request, lambda body: (scrape_url(body), scrape_options(body)),
                            lambda asked: work.scrape(*asked))

    @router.post("/crawl")
    async def start_crawl(request: Request) -> JSONResponse:
        return await posted(request, crawl_request, work.start_crawl, f"{request.base_url}{version}/crawl/")

    return router


def firecrawl_router(work: Firecrawl, auth: Auth) -> APIRouter:
    """The /v1 routes."""
    router = versioned_router("v1", work, auth)

    @router.get("/crawl/{crawl_id}")
    def crawl_status_route(crawl_id: str, request: Request, skip: int = 0) -> JSONResponse:
        if skip < 0:
            return _answer(400, failure("skip: must be 0 or more"))
        return answered(work.job_status, crawl_id, skip,
                        lambda n: f"{request.base_url}v1/crawl/{crawl_id}?skip={n}")

    @router.delete("/crawl/{crawl_id}")
    def cancel_crawl(crawl_id: str) -> JSONResponse:
        return answered(lambda: work.cancel(crawl_id, ended_is_conflict=False))

    @router.post("/map")
    async def map_route(request: Request) -> JSONResponse:
        return await posted(request, map_request,
                            lambda asked: {"success": True, "links": [e["url"] for e in work.map(asked)]})

    return router
