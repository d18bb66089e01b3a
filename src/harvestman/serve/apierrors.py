"""The API's errors in one shape (docs/serve.md): `{"detail": what was wrong, "field": where}`, `field`
naming the part of the request at fault (a dotted path in the body or the query, a setting's name, or
"body"), and `line` and `column` for a body that is not JSON. Firecrawl's /v1 and /v2 keep theirs
(serve/firecrawl2.py `firecrawl_errors`, added after these)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from harvestman.model.errors import ConfigError, HarvestmanError, QueryError, StorageError
from harvestman.serve.ceiling import CeilingError
from harvestman.serve.crawls import CrawlBusy, UnknownCrawl
from harvestman.serve.jobs import UnknownJob
from harvestman.serve.pages import PageNotFound
from harvestman.serve.settings import SettingsError

_WHERE = ("body", "query", "path", "header", "cookie")  # FastAPI's first part of an error's location


def error(status: int, detail: str, **extra: Any) -> JSONResponse:
    """An error answer: `detail`, and `field` (and more) where the error has them."""
    return JSONResponse({"detail": detail, **extra}, status_code=status)


def invalid_request(exc: RequestValidationError) -> JSONResponse:
    """A 422 naming the first thing wrong with the request, and where."""
    errors = exc.errors()
    first: dict[str, Any] = errors[0] if errors else {}
    loc = [str(part) for part in first.get("loc", ())]
    if first.get("type") == "json_invalid":  # loc is ("body", offset of the fault in the body)
        return _not_json(exc.body, int(loc[-1]) if loc and loc[-1].isdigit() else 0,
                         str(first.get("ctx", {}).get("error", "invalid JSON")))
    path = ".".join(part for part in loc[1 if loc and loc[0] in _WHERE else 0:]) or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return error(422, f"{path}: {first.get('msg', 'invalid')}{more}", field=path)


def _not_json(doc: Any, offset: int, why: str) -> JSONResponse:
    """A 422 for a body that is not JSON: where the parser stopped, as line and column (1-based)."""
    text = doc if isinstance(doc, str) else ""
    offset = min(offset, len(text))
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    return error(422, f"the body is not JSON: {why} at line {line}, column {column}",
                 field="body", line=line, column=column)


def add_error_handlers(app: FastAPI) -> None:
    """Every error the application answers, in the API's shape."""

    @app.exception_handler(CeilingError)
    async def too_wide(_: Request, exc: CeilingError) -> JSONResponse:
        return error(403, str(exc), field=exc.field)

    @app.exception_handler(SettingsError)
    async def bad_setting(_: Request, exc: SettingsError) -> JSONResponse:
        return error(422, str(exc), field=exc.field)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return invalid_request(exc)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":  # no route: say which was asked for
            detail = f"no such route: {request.method} {request.url.path}"
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}"
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(HarvestmanError)
    async def harvestman_error(_: Request, exc: HarvestmanError) -> JSONResponse:
        if isinstance(exc, UnknownCrawl | UnknownJob | PageNotFound):
            return error(404, str(exc))
        if isinstance(exc, CrawlBusy):
            return error(409, str(exc))
        if isinstance(exc, ConfigError | QueryError):
            return error(422, str(exc))
        if isinstance(exc, StorageError):
            return error(503, str(exc))
        return error(500, str(exc))
