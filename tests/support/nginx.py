"""A real nginx for tests: one server block per loopback address, each serving `root/<address>/`.

Usage::

    server = NginxServer(tmp_path / "www", ["127.88.0.1", "127.88.0.2"])  # the port is chosen here
    ...write root/127.88.0.1/index.html, perhaps with links that name server.port...
    with server:
        fetch(server.url("127.88.0.1", "/"))
        entries = server.wait_for_requests(1)

Everything nginx writes (config, pid, logs, temp files) lives in a private temp directory, so it runs
without touching /etc/nginx or /var/lib/nginx. Tests skip when nginx is not installed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import pytest

NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0

# Quoted fields are the ones that may hold spaces; nginx escapes '"' inside them as \x22.
LOG_FORMAT = (
    '$remote_addr $server_addr $server_port $connection $connection_requests $msec $status '
    '$body_bytes_sent "$request_method" "$request_uri" "$server_protocol" "$http_user_agent" '
    '$request_time $bytes_sent'
)
_LOG_LINE = re.compile(
    r'(?P<remote_addr>\S+) (?P<server_addr>\S+) (?P<server_port>\d+) (?P<connection>\d+) '
    r'(?P<connection_requests>\d+) (?P<msec>[\d.]+) (?P<status>\d+) (?P<bytes_sent>\d+) '
    r'"(?P<method>[^"]*)" "(?P<uri>[^"]*)" "(?P<protocol>[^"]*)" "(?P<user_agent>[^"]*)"'
    r'(?: (?P<request_time>[\d.]+))?'  # optional: lines written before the field was added parse too
    r'(?: (?P<total_sent>\d+))?'  # $bytes_sent: headers and body as sent (HTTP/2: frames too)
)

_MIME_TYPES = {
    "text/html": "html htm",
    "text/plain": "txt",
    "text/css": "css",
    "application/xml": "xml",
    "application/javascript": "js",
    "application/json": "json",
    "application/pdf": "pdf",
    "application/gzip": "gz",
    "image/png": "png",
    "image/jpeg": "jpg jpeg",
    "image/gif": "gif",
    "application/rss+xml": "rss",
    "application/atom+xml": "atom",
}


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One line of the access log: who asked which host for what, on which connection, when."""

    remote_addr: str
    server_addr: str
    server_port: int
    connection: int  # nginx's connection serial number: equal values mean one reused connection
    connection_requests: int  # the how-many-th request on that connection
    msec: float  # time the log line was written (epoch seconds, ms resolution)
    status: int
    bytes_sent: int
    method: str
    uri: str
    protocol: str
    user_agent: str
    # Seconds from the request's first byte to the log line (ms resolution); $msec and this come
    # from the same cached clock, so `start` is exact to the millisecond.
    request_time: float = 0.0
    total_sent: int = 0  # nginx's $bytes_sent: all bytes sent for the request, headers included

    @property
    def start(self) -> float:
        """When nginx read the request's first byte (epoch seconds, ms resolution)."""
        return (round(self.msec * 1000) - round(self.request_time * 1000)) / 1000


def parse_log_line(line: str) -> LogEntry | None:
    """Parse one access-log line written in LOG_FORMAT; None if it does not match."""
    m = _LOG_LINE.fullmatch(line.rstrip("\n"))
    if m is None:
        return None
    return LogEntry(
        remote_addr=m["remote_addr"],
        server_addr=m["server_addr"],
        server_port=int(m["server_port"]),
        connection=int(m["connection"]),
        connection_requests=int(m["connection_requests"]),
        msec=float(m["msec"]),
        status=int(m["status"]),
        bytes_sent=int(m["bytes_sent"]),
        method=m["method"],
        uri=m["uri"],
        protocol=m["protocol"],
        user_agent=m["user_agent"],
        request_time=float(m["request_time"] or 0.0),
        total_sent=int(m["total_sent"] or 0),
    )


def find_nginx() -> str | None:
    """The nginx binary's path, or None when nginx is not installed."""
    found = shutil.which("nginx")
    if found:
        return found
    return next((c for c in NGINX_CANDIDATES if os.access(c, os.X_OK)), None)


def require_nginx() -> str:
    """The nginx binary's path; skips the calling test when nginx is not installed."""
    binary = find_nginx()
    if binary is None:
        pytest.skip("nginx is not installed (apt-get install nginx; `bash .ci/run` does it)")
    return binary


def free_port(address: str) -> int:
    """A TCP port that is free on `address` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        port: int = sock.getsockname()[1]
        return port


class NginxServer:
    """nginx serving `root/<ip>/` on `<ip>:port` for each of `hosts` (loopback IPv4 addresses)."""

    def __init__(
        self,
        root: Path,
        hosts: list[str],
        port: int | None = None,
        *,
        extra_http: str = "",
        extra_server: str = "",
        by_address: bool = False,
    ) -> None:
        if not hosts:
            raise ValueError("NginxServer needs at least one host address")
        self.binary = require_nginx()
        self.root = Path(root).resolve()
        self.hosts = list(hosts)
        # Chosen now, before start(), so a site generator can write links that name the port.
        # A wildcard listener needs a port no process holds on any address.
        self.port = port if port is not None else free_port("0.0.0.0" if by_address else self.hosts[0])
        self.extra_http = extra_http  # raw nginx directives added to the http block
        self.extra_server = extra_server  # ... and to every server block
        # One wildcard listener choosing root/<address>/ by the address connected to: scales to 10^4
        # hosts, where a listener per address would not.
        self.by_address = by_address
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def workdir(self) -> Path:
        """The private directory holding nginx.conf, the pid file, the logs and temp files."""
        if self._tmp is None:
            raise RuntimeError("NginxServer is not started")
        return Path(self._tmp.name)

    @property
    def access_log(self) -> Path:
        """The access log's path."""
        return self.workdir / "access.log"

    @property
    def error_log(self) -> Path:
        """The error log's path."""
        return self.workdir / "error.log"

    def url(self, host_ip: str, path: str = "/") -> str:
        """The URL of `path` on the server block of `host_ip`."""
        if not path.startswith("/"):
            path = "/" + path
        return f"http://{host_ip}:{self.port}{path}"

    def config_text(self, workdir: Path) -> str:
        """The nginx.conf this server runs with."""
        user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read root/, often 0700 in tmp
        types = "\n".join(f"        {ctype} {exts};" for ctype, exts in _MIME_TYPES.items())
        if self.by_address:
            servers = f"""    server {{
        listen {self.port};
        server_name _;
        root {self.root}/$server_addr;
        {self.extra_server}
    }}"""
        else:
            servers = "\n".join(
                f"""    server {{
        listen {host}:{self.port};
        server_name _;
        root {self.root / host};
        {self.extra_server}
    }}"""
                for host in self.hosts
            )
        return f"""{user}daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 65536;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log warn;
events {{
    worker_connections 16384;
}}
http {{
    types {{
{types}
    }}
    default_type application/octet-stream;
    log_format harvestman '{LOG_FORMAT}';
    access_log {workdir}/access.log harvestman;
    client_body_temp_path {workdir}/client_body;
    proxy_temp_path {workdir}/proxy;
    fastcgi_temp_path {workdir}/fastcgi;
    uwsgi_temp_path {workdir}/uwsgi;
    scgi_temp_path {workdir}/scgi;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 30s;
    keepalive_requests 100000;
    server_tokens off;
    etag on;
    {self.extra_http}
{servers}
}}
"""

    def start(self) -> NginxServer:
        """Write the config, start nginx and wait (bounded) until every address accepts connections."""
        if self._proc is not None:
            return self
        self._tmp = tempfile.TemporaryDirectory(prefix="harvestman-nginx-")
        workdir = Path(self._tmp.name)
        conf = workdir / "nginx.conf"
        conf.write_text(self.config_text(workdir), encoding="utf-8")
        for host in self.hosts:
            (self.root / host).mkdir(parents=True, exist_ok=True)
        with open(workdir / "stderr.log", "wb") as stderr:  # a file, not a pipe nobody drains
            self._proc = subprocess.Popen(
                [self.binary, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "error.log")],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._proc is not None
        pending = self.hosts[:3] if self.by_address else list(self.hosts)
        deadline = time.monotonic() + START_TIMEOUT
        while pending:
            if self._proc.poll() is not None:
                raise RuntimeError(f"nginx exited with status {self._proc.returncode}: {self._errors()}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"nginx did not accept on {pending} within {START_TIMEOUT}s: {self._errors()}"
                )
            try:
                with socket.create_connection((pending[0], self.port), timeout=0.5):
                    pending.pop(0)
            except OSError:
                time.sleep(0.02)

    def _errors(self) -> str:
        text = ""
        if self._tmp is not None:
            for log in (self.workdir / "stderr.log", self.error_log):
                if log.exists():
                    text += log.read_text(errors="replace")
        return text.strip()[-2000:] or "(no error output)"

    def stop(self) -> None:
        """Stop nginx (graceful SIGQUIT, then SIGTERM, then SIGKILL, each waited on) and remove its files."""
        proc, self._proc = self._proc, None
        if proc is not None:
            for sig in (signal.SIGQUIT, signal.SIGTERM, signal.SIGKILL):
                if proc.poll() is not None:
                    break
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    continue
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def requests(self) -> list[LogEntry]:
        """Every request in the access log so far, in the order nginx logged them."""
        if not self.access_log.exists():
            return []
        lines = self.access_log.read_text(encoding="utf-8", errors="replace").splitlines()
        return [entry for line in lines if (entry := parse_log_line(line)) is not None]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[LogEntry]:
        """The logged requests once there are at least `count` (nginx logs just after it responds)."""
        deadline = time.monotonic() + timeout
        entries = self.requests()
        while len(entries) < count and time.monotonic() < deadline:
            time.sleep(0.01)
            entries = self.requests()
        return entries

    def __enter__(self) -> NginxServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
