"""Synchronous iteration over an async generator, run on its own thread and event loop."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")
_DONE = object()


def iterate_in_thread(make: Callable[[], AsyncGenerator[T, None]], buffer: int = 256) -> Iterator[T]:
    """Yield what `make()` yields, while it runs on a background thread; breaking out stops it."""
    handoff: queue.Queue[object] = queue.Queue(maxsize=buffer)
    stop = threading.Event()
    failure: list[BaseException] = []

    def put(item: object) -> bool:
        # A bounded queue gives back-pressure; the stop flag frees a producer whose consumer left.
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = []

    async def pump() -> None:
        running.append((asyncio.get_running_loop(), asyncio.current_task()))  # type: ignore[arg-type]
        agen = make()
        try:
            async for item in agen:
                if not await asyncio.to_thread(put, item):
                    break
        finally:
            await agen.aclose()

    def runner() -> None:
        try:
            asyncio.run(pump())
        except asyncio.CancelledError:
            if not stop.is_set():
                raise
        except BaseException as exc:  # handed over to the consumer's thread
            failure.append(exc)
        finally:
            put(_DONE)

    thread = threading.Thread(target=runner, name="harvestman-loop", daemon=True)
    thread.start()
    try:
        while (item := handoff.get()) is not _DONE:
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        # Cancel the producer where it waits (say, for a slow download), not at its next item.
        for loop, task in running:
            with contextlib.suppress(RuntimeError):  # the loop has already finished
                loop.call_soon_threadsafe(task.cancel)
        while thread.is_alive():
            with contextlib.suppress(queue.Empty):
                handoff.get(timeout=0.05)
        thread.join()
    if failure:
        raise failure[0]
