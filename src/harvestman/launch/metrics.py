"""Where a run's metrics go while it runs: a Prometheus endpoint on 127.0.0.1 (`--metrics-port`), or
a file a server reads (`serve`'s crawl processes write ROOT/<id>/metrics.json)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harvestman.crawl.exposition import CONTENT_TYPE, MetricsSource, exposition
from harvestman.crawl.metrics import MetricsSnapshot
from harvestman.crawl.stats import CrawlCounts
from harvestman.model.errors import ConfigError

METRICS_HOST = "127.0.0.1"  # the figures name the crawl's hosts: for this machine's scraper only
WRITE_EVERY = 1.0  # seconds between a metrics file's updates

Source = Callable[[], MetricsSource]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    source: Source


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self._answer(404, b"only /metrics here\n", "text/plain; charset=utf-8")
            return
        body = exposition([self.server.source()]).encode()
        self._answer(200, body, CONTENT_TYPE)

    def _answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # a scrape every few seconds: not logged
        return


class MetricsServer:
    """Serves a run's figures at http://127.0.0.1:PORT/metrics from a thread of its own.

    The port is bound when made (a taken port is a ConfigError before the run starts); the thread
    starts with `start()`, after the run's worker processes are forked.
    """

    def __init__(self, port: int, host: str = METRICS_HOST) -> None:
        try:
            self._server = _Server((host, port), _Handler)
        except OSError as exc:
            raise ConfigError(f"--metrics-port {port}: cannot listen on {host}:{port}: "
                              f"{exc.strerror or exc} (choose another port)") from None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on (the one asked for)."""
        return int(self._server.server_address[1])

    def start(self, source: Source) -> None:
        """Answer scrapes with `source`'s figures from now on."""
        self._server.source = source
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="harvestman-metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop answering and free the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()


def counts_json(source: MetricsSource) -> dict[str, Any]:
    """A run's figures as a plain dict (a metrics file's content)."""
    counts = source.counts
    plain = {f.name: getattr(counts, f.name) for f in dataclasses.fields(counts)
             if f.name not in ("busy_hosts", "metrics")}
    return {"counts": plain, "busy_hosts": sorted(counts.busy_hosts), "processes": source.processes,
            "metrics": counts.metrics.to_json() if counts.metrics is not None else None}


def read_counts(path: Path, labels: tuple[tuple[str, str], ...] = ()) -> MetricsSource | None:
    """The figures a metrics file holds; None when there is none, or it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        metrics = data.get("metrics")
        counts = CrawlCounts(**data["counts"], busy_hosts=frozenset(data["busy_hosts"]),
                             metrics=MetricsSnapshot.from_json(metrics) if metrics else None)
        return MetricsSource(counts, int(data["processes"]), labels)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


class MetricsFile:
    """Writes a run's figures to `path` every second from a thread of its own, and once at the end."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._source: Source | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def write(self) -> None:
        """Replace the file with the figures now (atomically: a reader never sees half of it)."""
        assert self._source is not None, "start() first"
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(counts_json(self._source())), encoding="utf-8")
        os.replace(tmp, self.path)

    def start(self, source: Source) -> None:
        """Write `source`'s figures now and every second."""
        self._source = source
        self._thread = threading.Thread(target=self._run, name="harvestman-metrics-file", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with contextlib.suppress(OSError):  # a full disk: the crawl says so itself; figures wait
                self.write()
            if self._stop.wait(WRITE_EVERY):
                return

    def close(self) -> None:
        """Stop, writing the run's last figures."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            with contextlib.suppress(OSError):
                self.write()
