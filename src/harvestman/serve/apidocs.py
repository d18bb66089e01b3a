"""The API's description behind the token: /openapi.json, and /docs as Swagger UI from the files the
package ships (serve/docs_ui/), so the page works with no network but the server's own."""

from __future__ import annotations

from pathlib import Path

from fastapi import Depends, FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from harvestman.serve.auth import Auth

DOCS_UI = Path(__file__).parent / "docs_ui"
# The files /docs/ui/NAME serves, by name: nothing else of the folder, and no path from the request.
_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


def add_docs(app: FastAPI, auth: Auth) -> None:
    """/openapi.json, /docs and the files of /docs, each behind `auth`."""

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(auth)])
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=[Depends(auth)])
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="harvestman API",
            swagger_js_url="/docs/ui/swagger-ui-bundle.js",
            swagger_css_url="/docs/ui/swagger-ui.css",
            swagger_favicon_url="/docs/ui/favicon-32x32.png",
        )

    @app.get("/docs/ui/{name}", include_in_schema=False, dependencies=[Depends(auth)])
    def docs_file(name: str) -> FileResponse:
        media_type = _ASSETS.get(name)
        if media_type is None or not (DOCS_UI / name).is_file():
            raise HTTPException(404, f"no such file of /docs: {name}")
        # Private: the files are behind the token; a day in the browser's cache, as they change only
        # with the package.
        return FileResponse(DOCS_UI / name, media_type=media_type,
                            headers={"Cache-Control": "private, max-age=86400"})
