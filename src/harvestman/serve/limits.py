"""An ASGI middleware refusing request bodies over a size (413), declared or streamed."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harvestman.serve.fcshapes import FIRECRAWL_PREFIXES, failure

MAX_BODY = 1024 * 1024


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Answers 413 when a request's body exceeds `limit` bytes."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = self.limit + 1
                if declared > self.limit:
                    await self._refuse(scope, send)
                    return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        message = f"request body over {self.limit} bytes"
        # Firecrawl's clients read their errors in Firecrawl's shape.
        shaped = failure(message, "PAYLOAD_TOO_LARGE") if scope["path"].startswith(FIRECRAWL_PREFIXES) else {
            "detail": message}
        body = json.dumps(shaped).encode()
        headers: list[Any] = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
