"""One browser for a whole test session: a BrowserRenderer living on an event loop in its own thread.

Playwright's objects belong to the loop that made them, and tests run their coroutines with
`asyncio.run` (a new loop each); so the session's renderer gets a loop of its own, and tests hand it
coroutines (`BrowserLoop.run`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BrowserLoop:
    """An event loop running in a daemon thread; `run` executes a coroutine there and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="browser-loop")
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 90.0) -> T:
        """Run `coro` on the loop and return its result (its exception raised here)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        with contextlib.suppress(RuntimeError):
            self.loop.close()


class Canary:
    """A listener on a loopback address a crawl does not allow: counts every connection that reaches it."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((address, 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.address = address
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True, name="canary")
        self.thread.start()

    @property
    def url(self) -> str:
        """http://ADDRESS:PORT"""
        return f"http://{self.address}:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():  # bounded by close(): the accept times out every 0.2 s
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.hits += 1
            conn.close()

    def close(self) -> None:
        """Stop listening."""
        self._stop.set()
        self.thread.join(timeout=5)
        self.sock.close()
