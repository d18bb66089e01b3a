"""The server: `create_app(root, token, db)` builds the FastAPI application (API, sign-in, web page)."""

from __future__ import annotations

from pathlib import Path

from fastapi import Depends, FastAPI, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from harvestman.crawl.exposition import CONTENT_TYPE, exposition
from harvestman.launch.metrics import read_counts
from harvestman.serve.api import Services, api_router
from harvestman.serve.apidocs import add_docs
from harvestman.serve.apierrors import add_error_handlers, error
from harvestman.serve.auth import CSRF_COOKIE, SESSION_COOKIE, Auth, csrf_ok, new_csrf
from harvestman.serve.ceiling import NetCeiling
from harvestman.serve.crawls import CrawlManager
from harvestman.serve.firecrawl import Firecrawl, firecrawl_router
from harvestman.serve.firecrawl2 import firecrawl2_router, firecrawl_errors
from harvestman.serve.layout import CrawlPaths
from harvestman.serve.limits import MAX_BODY, BodyLimit

STATIC = Path(__file__).parent / "static"
_FALLBACK_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>harvestman</title></head><body><h1>harvestman</h1><p>{what}</p></body></html>"""
_FALLBACK_LOGIN = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Sign in · harvestman</title></head><body><form method="post" action="/login">
<label>Token <input name="token" type="password"></label>
<input type="hidden" name="csrf" value="{csrf}"><button>Sign in</button></form></body></html>"""


def create_app(root: Path, token: str, db: str = "", *, max_body: int = MAX_BODY,
               ceiling: NetCeiling | None = None) -> FastAPI:
    """The application serving the crawls under `root` (kept in PostgreSQL at `db` when given);
    everything it fetches for a client (crawls, steps, the Firecrawl-shaped /v1 and /v2) keeps within
    `ceiling`."""
    auth = Auth(token)
    services = Services(CrawlManager(Path(root), db, ceiling))
    # The API's description is behind the token too (it is added below with the auth dependency).
    app = FastAPI(title="harvestman", summary="Start, watch and search crawls.", version="1",
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.services = services
    app.include_router(api_router(services, auth))
    firecrawl = Firecrawl(services.manager, services.searcher, services.pages)
    app.include_router(firecrawl_router(firecrawl, auth))
    app.include_router(firecrawl2_router(firecrawl, auth))
    add_docs(app, auth)
    add_error_handlers(app)
    firecrawl_errors(app)
    _add_pages(app, auth)
    _add_metrics(app, auth, services.manager)
    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(BodyLimit, limit=max_body)
    return app


def _add_metrics(app: FastAPI, auth: Auth, manager: CrawlManager) -> None:
    @app.get("/metrics", include_in_schema=False, dependencies=[Depends(auth)])
    def metrics() -> Response:
        """Every crawl's figures as Prometheus text, a `crawl` label each (those of its last run)."""
        sources = []
        for crawl_id in manager.ids():
            found = read_counts(CrawlPaths(manager.root / crawl_id).metrics, (("crawl", crawl_id),))
            if found is not None:
                sources.append(found)
        return Response(exposition(sources), media_type=CONTENT_TYPE)


def _add_pages(app: FastAPI, auth: Auth) -> None:
    @app.get("/health", include_in_schema=False)
    def health() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/", include_in_schema=False, response_model=None)
    def index(request: Request) -> Response:
        if not (auth.session_ok(request) or auth.bearer_ok(request)):
            return RedirectResponse("/login", status_code=303)
        page = STATIC / "index.html"
        if page.is_file():
            return FileResponse(page, headers={"Cache-Control": "no-store"})
        return HTMLResponse(_FALLBACK_PAGE.format(what="The web page is not installed; the API is at /docs."))

    @app.get("/login", include_in_schema=False)
    def login_page(request: Request) -> Response:
        csrf = request.cookies.get(CSRF_COOKIE) or new_csrf()
        page = STATIC / "login.html"
        response: Response
        if page.is_file():
            response = FileResponse(page, headers={"Cache-Control": "no-store"})
        else:
            response = HTMLResponse(_FALLBACK_LOGIN.format(csrf=csrf))
        response.set_cookie(
            CSRF_COOKIE,
            csrf,
            httponly=False,
            samesite="strict",
            path="/",
            secure=request.url.scheme == "https",
        )
        return response

    @app.post("/login", include_in_schema=False)
    def login(request: Request, token: str = Form(""), csrf: str = Form("")) -> Response:
        if not csrf_ok(request, csrf):
            return HTMLResponse(
                _FALLBACK_PAGE.format(
                    what="The sign-in form had expired: <a href='/login'>sign in again</a>."
                ),
                status_code=403,
            )
        if not auth.token_ok(token):
            return HTMLResponse(
                _FALLBACK_PAGE.format(what="Wrong token: <a href='/login'>try again</a>."), status_code=401
            )
        response = RedirectResponse("/", status_code=303)
        secure = request.url.scheme == "https"
        response.set_cookie(
            SESSION_COOKIE, auth.session_value, httponly=True, samesite="strict", path="/", secure=secure
        )
        response.set_cookie(
            CSRF_COOKIE, new_csrf(), httponly=False, samesite="strict", path="/", secure=secure
        )
        return response

    @app.post("/logout", include_in_schema=False)
    def logout(request: Request, csrf: str = Form("")) -> Response:
        given = request.headers.get("X-CSRF-Token", "") or csrf
        if auth.session_ok(request) and not csrf_ok(request, given):
            return error(403, "missing or wrong X-CSRF-Token header")
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response
