"""The REST API's routes (docs/serve.md): crawls, their events, URLs, pages, search and jobs."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from harvestman.serve.auth import Auth
from harvestman.serve.crawls import RUNNING_STATES, CrawlBusy, CrawlManager
from harvestman.serve.eventlog import EventFigures, LogLine, read_events
from harvestman.serve.jobs import JobRunner
from harvestman.serve.jobspecs import job_spec
from harvestman.serve.pages import WarcLookup
from harvestman.serve.search import Searcher
from harvestman.serve.settings import check_settings
from harvestman.serve.status import open_db, summary
from harvestman.serve.urls import UrlFilter, url_page

SUMMARY_TTL = 0.25  # seconds a crawl's summary is served again to other askers
STATUS_EVERY = 1.0  # seconds between the event stream's status events
POLL = 0.05  # seconds between reads of a growing event log
_KIND = re.compile(r"^[a-z_]{1,40}$")


@dataclass
class Services:
    """What the routes work with, made once per server."""

    manager: CrawlManager
    figures: EventFigures = field(default_factory=EventFigures)
    pages: WarcLookup = field(default_factory=WarcLookup)
    searcher: Searcher = field(default_factory=Searcher)
    jobs: JobRunner = field(default_factory=JobRunner)
    # crawl id -> (state, when, summary): many watchers of one crawl (pollers, each SSE stream's status
    # every second) cost the crawl database one set of queries per SUMMARY_TTL, not one each.
    _cache: dict[str, tuple[str, float, dict[str, Any]]] = field(default_factory=dict)

    def summary(self, crawl_id: str) -> dict[str, Any]:
        """The CrawlSummary of one crawl (at most SUMMARY_TTL old, and never of another state)."""
        info = self.manager.info(crawl_id)
        now = time.monotonic()
        cached = self._cache.get(crawl_id)
        if cached is not None and cached[0] == info.state and now - cached[1] < SUMMARY_TTL:
            return cached[2]
        fresh = summary(info, self.figures)
        self._cache[crawl_id] = (info.state, now, fresh)
        return fresh

    def forget(self, crawl_id: str) -> None:
        """Drop what is cached of a deleted crawl."""
        self._cache.pop(crawl_id, None)


class NewCrawl(BaseModel):
    """The body of POST /api/crawls."""

    seeds: list[str]
    settings: dict[str, Any] = {}


def _sse(event: str, data: dict[str, Any], event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def api_router(services: Services, auth: Auth) -> APIRouter:
    """The /api routes, each behind `auth`."""
    router = APIRouter(prefix="/api", dependencies=[Depends(auth)])
    manager = services.manager

    @router.post("/crawls", status_code=201)
    def create_crawl(body: NewCrawl) -> dict[str, str]:
        """Start a crawl of `seeds` with `settings` (named as the crawl's settings)."""
        seeds, settings = check_settings(body.seeds, body.settings)
        return {"id": manager.create(seeds, settings)}

    @router.get("/crawls")
    def list_crawls() -> dict[str, Any]:
        """Every crawl's summary, newest first."""
        out = []
        for crawl_id in manager.ids():
            try:
                out.append(services.summary(crawl_id))
            except Exception:  # deleted while listed
                continue
        return {"crawls": out}

    @router.get("/crawls/{crawl_id}")
    def get_crawl(crawl_id: str) -> dict[str, Any]:
        """One crawl's summary."""
        return services.summary(crawl_id)

    @router.post("/crawls/{crawl_id}/stop")
    def stop_crawl(crawl_id: str) -> dict[str, Any]:
        """Finish the fetches in flight and stop (a second stop abandons them)."""
        manager.stop(crawl_id)
        return services.summary(crawl_id)

    @router.post("/crawls/{crawl_id}/resume")
    def resume_crawl(crawl_id: str) -> dict[str, Any]:
        """Start a stopped, finished or failed crawl again where it ended."""
        manager.resume(crawl_id)
        return services.summary(crawl_id)

    @router.delete("/crawls/{crawl_id}", status_code=204)
    def delete_crawl(crawl_id: str, confirm: bool = False) -> Response:
        """Delete a crawl and everything it stored; asks twice (`?confirm=true`)."""
        info = manager.info(crawl_id)
        if not confirm:
            raise CrawlBusy(
                f"deleting crawl {crawl_id} removes everything it stored: repeat with ?confirm=true"
            )
        manager.delete(crawl_id)
        services.figures.forget(info.paths.events)
        services.forget(crawl_id)
        return Response(status_code=204)

    @router.get("/crawls/{crawl_id}/urls")
    def list_urls(
        crawl_id: str, state: str = "", host: str = "", q: str = "", limit: int = 50, cursor: str = ""
    ) -> dict[str, Any]:
        """The crawl database, a page at a time."""
        db = open_db(manager.info(crawl_id))
        try:
            return url_page(db, UrlFilter(state, host, q), limit, cursor)
        finally:
            if db is not None:
                db.close()

    @router.get("/crawls/{crawl_id}/page", response_model=None)
    def get_page(crawl_id: str, url: str, raw: bool = False) -> dict[str, Any] | Response:
        """The stored response of `url`: status, headers and body (as text, or `raw=1` as sent)."""
        page = services.pages.find(manager.info(crawl_id).paths.crawl_dir, url)
        if not raw:
            return page.as_json()
        # The page is the crawled site's, not ours: sandboxed, never sniffed into something else.
        return Response(
            page.body,
            media_type=page.content_type or "application/octet-stream",
            headers={"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"},
        )

    @router.get("/crawls/{crawl_id}/search")
    def search(crawl_id: str, q: str, limit: int = 10) -> dict[str, Any]:
        """Ranked pages for `q`, with highlighted snippets; the index is brought up to date first."""
        return services.searcher.search(manager.info(crawl_id), q, limit)

    @router.post("/crawls/{crawl_id}/jobs", status_code=202)
    def start_job(crawl_id: str, body: dict[str, Any]) -> dict[str, str]:
        """Run a crawl-cycle step (`type`: generate, fetch, updatedb, invertlinks, rank, dedup, index)."""
        info = manager.info(crawl_id)
        if info.state in RUNNING_STATES:
            raise CrawlBusy(f"crawl {crawl_id} is {info.state}: its steps run once it has stopped")
        options = dict(body)
        job_type = options.pop("type", None)
        spec = job_spec(str(job_type), options)
        return {"id": services.jobs.start(info.paths, spec, manager.ceiling.network(info.settings))}

    @router.get("/crawls/{crawl_id}/jobs/{job_id}")
    def get_job(crawl_id: str, job_id: str) -> dict[str, Any]:
        """A job's state."""
        return services.jobs.get(manager.info(crawl_id).paths, job_id)

    @router.get("/crawls/{crawl_id}/events")
    async def events(
        crawl_id: str,
        start: int | None = Query(None, alias="from", ge=0),
        last_event_id: str | None = Header(None),
    ) -> StreamingResponse:
        """The crawl's events as Server-Sent Events, a status every second, until the crawl ends."""
        info = await run_in_threadpool(manager.info, crawl_id)
        offset = start or 0
        if start is None and last_event_id and last_event_id.isdigit():
            offset = int(last_event_id)
        return StreamingResponse(
            _stream(services, info.id, offset),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return router


async def _stream(services: Services, crawl_id: str, offset: int) -> AsyncIterator[str]:
    """The event log from `offset` on, live; a status each second; a final status once the crawl's
    process has ended and its log is read to the end."""
    path = services.manager.paths(crawl_id).events
    next_status = 0.0
    while True:
        lines, offset = await asyncio.to_thread(read_events, path, offset)
        if lines:  # one write for all the lines read: a busy crawl's events cost few sends
            yield _sse_lines(lines)
        now = time.monotonic()
        if now >= next_status:
            next_status = now + STATUS_EVERY
            try:
                status = await asyncio.to_thread(services.summary, crawl_id)
            except Exception as exc:  # deleted while watched
                yield _sse("error", {"detail": str(exc)})
                return
            if status["state"] not in RUNNING_STATES:
                while True:  # the process has ended: its log is complete
                    lines, offset = await asyncio.to_thread(read_events, path, offset)
                    if not lines:
                        break
                    yield _sse_lines(lines)
                    status = await asyncio.to_thread(services.summary, crawl_id)
                yield _sse("status", status)
                return
            yield _sse("status", status)
        if not lines:
            await asyncio.sleep(POLL)


def _sse_lines(lines: list[LogLine]) -> str:
    """Events of the log as SSE messages; the data is the line as the crawl wrote it (one JSON
    object on one line)."""
    out = []
    for line in lines:
        kind = str(line.event.get("kind", ""))
        out.append(
            f"id: {line.end}\nevent: {kind if _KIND.fullmatch(kind) else 'message'}\ndata: {line.text}\n\n"
        )
    return "".join(out)
