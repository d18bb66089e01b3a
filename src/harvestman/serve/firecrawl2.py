"""Firecrawl's v2 API on `harvestman serve` (the default class of firecrawl-py 4, `Firecrawl`):
/v2/scrape, /v2/crawl (start, status, cancel, errors), /v2/map, /v2/batch/scrape (start, status,
cancel, errors) and /v2/search, doing the work v1's routes do (serve/firecrawl.py); /v2/extract is
refused. Every /v1 and /v2 error, an unknown route's included, is in Firecrawl's shape."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from harvestman.serve.auth import Auth
from harvestman.serve.fcshapes import (
    EXTRACT_REFUSED,
    FIRECRAWL_PREFIXES,
    batch_request,
    failure,
    map_request,
    search_request,
)
from harvestman.serve.firecrawl import PAGE_SIZE, Firecrawl, answered, posted, versioned_router

# An HTTP status as Firecrawl's error code, for the errors FastAPI raises itself.
_CODES = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND",
          405: "METHOD_NOT_ALLOWED"}


def firecrawl2_router(work: Firecrawl, auth: Auth) -> APIRouter:
    """The /v2 routes."""
    router = versioned_router("v2", work, auth)

    @router.post("/batch/scrape")
    async def start_batch(request: Request) -> JSONResponse:
        return await posted(request, batch_request, work.start_batch, f"{request.base_url}v2/batch/scrape/")

    for kind in ("crawl", "batch/scrape"):
        _job_routes(router, work, kind)

    @router.post("/map")
    async def map_route(request: Request) -> JSONResponse:
        return await posted(request, lambda body: map_request(body, subdomains=True, ignore_query=True),
                            lambda asked: {"success": True, "links": work.map(asked)})

    @router.post("/search")
    async def search(request: Request) -> JSONResponse:
        return await posted(request, search_request, work.search)

    @router.post("/extract")
    def extract() -> JSONResponse:
        return JSONResponse(failure(EXTRACT_REFUSED, "EXTRACT_NOT_SUPPORTED"), status_code=400)

    return router


def _job_routes(router: APIRouter, work: Firecrawl, kind: str) -> None:
    """Status (with `next` relative to the server), cancel and errors of a crawl or a batch scrape."""

    @router.get(f"/{kind}/{{job_id}}", name=f"{kind} status")
    def status(job_id: str, skip: int = 0, limit: int = PAGE_SIZE) -> JSONResponse:
        if skip < 0 or limit < 1:
            return JSONResponse(failure("skip: 0 or more; limit: 1 or more"), status_code=400)
        more = f"&limit={limit}" if limit != PAGE_SIZE else ""
        return answered(work.job_status, job_id, skip, lambda n: f"/v2/{kind}/{job_id}?skip={n}{more}", limit)

    @router.delete(f"/{kind}/{{job_id}}", name=f"{kind} cancel")
    def cancel(job_id: str) -> JSONResponse:
        return answered(lambda: work.cancel(job_id, ended_is_conflict=True))

    @router.get(f"/{kind}/{{job_id}}/errors", name=f"{kind} errors")
    def errors(job_id: str) -> JSONResponse:
        return answered(work.job_errors, job_id)


def firecrawl_errors(app: FastAPI) -> None:
    """Errors of /v1 and /v2 requests that no route answered (unknown routes, a wrong method, a
    missing token, a bad query parameter) in Firecrawl's shape; other paths keep the handlers the
    application had (call this after adding them)."""
    other_http = app.exception_handlers.get(HTTPException, http_exception_handler)
    other_validation = app.exception_handlers.get(RequestValidationError,
                                                  request_validation_exception_handler)

    def shaped(request: Request, status: int, message: str) -> JSONResponse | None:
        if not request.url.path.startswith(FIRECRAWL_PREFIXES):
            return None
        return JSONResponse(failure(message, _CODES.get(status, "UNKNOWN_ERROR")), status_code=status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 404 and request.url.path.startswith(FIRECRAWL_PREFIXES):
            detail = f"no such route: {request.method} {request.url.path}"
        else:
            detail = str(exc.detail)
        answer = shaped(request, exc.status_code, detail)
        if answer is None:
            return await _handled(other_http(request, exc))
        if exc.headers:
            answer.headers.update(exc.headers)
        return answer

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        first: dict[str, Any] = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path"))
        answer = shaped(request, 400, f"{where or 'request'}: {first.get('msg', 'invalid')}")
        if answer is None:
            return await _handled(other_validation(request, exc))
        return answer


async def _handled(answer: Response | Awaitable[Response]) -> Response:
    """What another exception handler answered (they may be plain functions or coroutines)."""
    return await answer if inspect.isawaitable(answer) else answer
