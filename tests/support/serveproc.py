"""`harvestman serve` as a real process on a loopback port, and a small HTTP client for its API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPResponse
from pathlib import Path
from typing import Any

from tests.support.crawlcheck import harvestman_cmd
from tests.support.nginx import free_port

TOKEN = "test-token-0123456789abcdef"


@dataclass
class Reply:
    """One answer: status, headers (lower-case names; Set-Cookie lines kept apart) and body."""

    status: int
    headers: dict[str, str]
    cookies: list[str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ServeProcess:
    """A `harvestman serve` process over `root`; kill() is a crash (SIGKILL), stop() a Ctrl-C."""

    def __init__(
        self,
        root: Path,
        *,
        token: str | None = TOKEN,
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.root = root
        self.token = token
        self.port = free_port("127.0.0.1")
        self.extra = extra
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root.parent / f"serve-{self.port}.log"

    def start(self, timeout: float = 30) -> ServeProcess:
        args = ["serve", "--data", str(self.root), "--port", str(self.port), *self.extra]
        if self.token:
            args += ["--token", self.token]
        env = dict(os.environ if self.env is None else self.env)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(harvestman_cmd(*args), stdout=log, stderr=log, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"harvestman serve ended: {self.log.read_text()}")
            try:
                if self.call("GET", "/health", auth=False).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)  # a loopback call: polling often costs little, and each test starts one
        raise RuntimeError(f"harvestman serve did not answer in {timeout} s: {self.log.read_text()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        auth: bool = True,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        timeout: float = 30,
    ) -> Reply:
        """One request; `body` sent as JSON, `raw` as it is."""
        sent = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        if auth and self.token:
            sent.setdefault("Authorization", f"Bearer {self.token}")
        conn = HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=sent)
            resp = conn.getresponse()
            return Reply(
                resp.status,
                {k.lower(): v for k, v in resp.getheaders()},
                resp.headers.get_all("Set-Cookie") or [],
                resp.read(),
            )
        finally:
            conn.close()

    def stream(self, path: str, timeout: float = 60) -> Iterator[tuple[str, dict[str, Any], float]]:
        """The SSE events of `path`: (event, data, time received), until the server ends the stream."""
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", headers={"Authorization": f"Bearer {self.token}"}
        )
        resp: HTTPResponse = urllib.request.urlopen(req, timeout=timeout)
        event, data = "message", ""
        try:
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif not line and data:
                    yield event, json.loads(data), time.time()
                    event, data = "message", ""
        except urllib.error.URLError:
            return
        finally:
            resp.close()

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for(predicate: Any, timeout: float, what: str, every: float = 0.05) -> Any:
    """Call `predicate` until it returns something true; its value. AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
