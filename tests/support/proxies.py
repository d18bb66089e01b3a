"""Proxies for tests, on loopback: Debian's squid with Debian's default access rules (CONNECT to port
443 only), Debian's tinyproxy (an HTTP proxy, CONNECT tunnels to any port) and a small SOCKS5 server
written here (RFC 1928: no authentication, CONNECT only), and `TlsFront`, TLS ended in front of
either, for an https:// proxy. Each records what it was
asked to connect to, so a test can tell the proxy really carried the crawl's requests, and to where.

    with TinyProxy(tmp_path / "tinyproxy") as proxy:   # proxy.url: http://127.0.0.1:PORT
        ...crawl with --proxy proxy.url...
        assert proxy.connects() == ["127.0.0.2:8080"]
    with Socks5Proxy() as proxy:                        # proxy.url: socks5://127.0.0.1:PORT
        ...
        assert proxy.requests == [("ipv4", "127.0.0.2", 8080)]
    with Squid() as proxy:                              # proxy.url: http://127.0.0.1:PORT
        ...
        assert proxy.requests() == [("GET", "http://127.0.0.2:8080/", 200)]
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import pwd
import re
import selectors
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.support.nginx import free_port

START_TIMEOUT = 10.0
_CONNECT_LINE = re.compile(r"Request \(file descriptor \d+\): CONNECT (\S+) HTTP/1\.[01]")
_ANY_REQUEST = re.compile(r"Request \(file descriptor \d+\): (\S+) (\S+)")


def require_tinyproxy() -> str:
    """The tinyproxy binary; the test skips without it (`bash .ci/run` installs it)."""
    found = shutil.which("tinyproxy") or next(
        (p for p in ("/usr/bin/tinyproxy", "/usr/sbin/tinyproxy") if Path(p).exists()), None)
    if found is None:
        pytest.skip("tinyproxy is not installed (apt-get install tinyproxy; `bash .ci/run` does it)")
    return found


class TinyProxy:
    """A private tinyproxy on 127.0.0.1 (config, log and pid in `workdir`), any CONNECT port allowed."""

    def __init__(self, workdir: Path, address: str = "127.0.0.1") -> None:
        self.binary = require_tinyproxy()
        self.workdir = workdir
        self.address = address
        self.port = free_port(address)
        self.log = workdir / "tinyproxy.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """http://ADDRESS:PORT"""
        return f"http://{self.address}:{self.port}"

    def start(self) -> TinyProxy:
        """Start tinyproxy in the foreground of a child process and wait until it accepts."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "tinyproxy.conf"
        # No ConnectPort line: CONNECT to any port (the test servers' ports are chosen at random).
        config.write_text(
            f"Port {self.port}\nListen {self.address}\nTimeout 30\nMaxClients 50\n"
            f'LogFile "{self.log}"\nLogLevel Info\nPidFile "{self.workdir / "tinyproxy.pid"}"\n'
            f"Allow {self.address}\n",
            encoding="utf-8")
        self._process = subprocess.Popen([self.binary, "-d", "-c", str(config)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_accepting(self._process, self.address, self.port, "tinyproxy")
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop tinyproxy."""
        _stop(self._process)

    def requests(self) -> list[tuple[str, str]]:
        """Every request the proxy was sent, as (method, target), from its log."""
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return [(m.group(1), m.group(2)) for m in _ANY_REQUEST.finditer(text)]

    def connects(self) -> list[str]:
        """The HOST:PORT of every CONNECT the proxy was asked for."""
        return [target for method, target in self.requests() if method == "CONNECT"]

    def __enter__(self) -> TinyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_accepting(process: subprocess.Popen[bytes], address: str, port: int, name: str) -> None:
    """Wait until `process` accepts on address:port; RuntimeError when it exits or the deadline passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:  # bounded: until it accepts or the deadline
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}")
        try:
            socket.create_connection((address, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not start")


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


SQUID_DEFAULT_CONF = Path("/etc/squid/squid.conf")
_SQUID_LOG_LINE = re.compile(r"^\S+\s+\d+\s+\S+\s+\S+/(\d{3})\s+\d+\s+(\S+)\s+(\S+)")


def require_squid() -> str:
    """The squid binary; the test skips without it (`bash .ci/run` installs it)."""
    found = shutil.which("squid") or ("/usr/sbin/squid" if Path("/usr/sbin/squid").exists() else None)
    if found is None or not SQUID_DEFAULT_CONF.exists():
        pytest.skip("squid is not installed (apt-get install squid; `bash .ci/run` does it)")
    return found


class Squid:
    """A private squid on 127.0.0.1 with the access rules (`acl`, `http_access`) of Debian's default
    /etc/squid/squid.conf, copied as they are: CONNECT to port 443 only, other requests to the "safe"
    ports, clients on localhost. Its own port, no cache, logs and pid in a temp dir; the system's squid
    is never touched. It resolves names with the name server at `dns` (a test's FakeDns), no other."""

    def __init__(self, address: str = "127.0.0.1", dns: str = "127.0.0.1") -> None:
        self.binary = require_squid()
        self.address = address
        self.dns = dns
        self.port = free_port(address)
        # Not under pytest's tmp_path: squid started as root writes as the `proxy` user, which must
        # reach the folder (pytest's are root's alone).
        self.workdir = Path(tempfile.mkdtemp(prefix="harvestman-squid-"))
        self.log = self.workdir / "access.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """http://ADDRESS:PORT"""
        return f"http://{self.address}:{self.port}"

    def config_text(self) -> str:
        """Debian's default access rules, then this instance's own port, files and no cache."""
        rules = [line for line in SQUID_DEFAULT_CONF.read_text(encoding="utf-8").splitlines()
                 if line.startswith(("acl ", "http_access "))]
        own = self.workdir
        return "\n".join([
            *rules,
            f"http_port {self.address}:{self.port}",
            f"pid_filename {own / 'squid.pid'}",
            f"cache_log {own / 'cache.log'}",
            f"access_log stdio:{self.log}",
            "cache deny all", "cache_mem 0 MB", f"coredump_dir {own}",
            f"dns_nameservers {self.dns}", f"hosts_file {own / 'hosts'}",
            "pinger_enable off", "shutdown_lifetime 0 seconds", "visible_hostname squid.test",
            "logfile_rotate 0", "",
        ])

    def start(self) -> Squid:
        """Start squid in the foreground (-N) of a child process and wait until it accepts."""
        (self.workdir / "hosts").write_text("", encoding="utf-8")
        config = self.workdir / "squid.conf"
        config.write_text(self.config_text(), encoding="utf-8")
        if os.geteuid() == 0:  # squid drops to its cache_effective_user, Debian's `proxy`
            os.chown(self.workdir, pwd.getpwnam("proxy").pw_uid, -1)
        self._process = subprocess.Popen([self.binary, "-N", "-f", str(config)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_accepting(self._process, self.address, self.port, "squid")
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop squid and remove its folder."""
        _stop(self._process)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def requests(self) -> list[tuple[str, str, int]]:
        """Every request squid was sent, as (method, URL or HOST:PORT, status it answered), from its log."""
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        found = (_SQUID_LOG_LINE.match(line) for line in text.splitlines())
        return [(m.group(2), m.group(3), int(m.group(1))) for m in found if m]

    def __enter__(self) -> Squid:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Socks5Proxy:
    """A SOCKS5 proxy (no authentication, CONNECT only) on loopback; `requests` records each CONNECT
    as (address type: ipv4, ipv6 or domain; address; port)."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        self._sock = socket.create_server((address, 0))
        self._sock.settimeout(0.1)
        self.address = address
        self.port: int = self._sock.getsockname()[1]
        self.requests: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="socks5")

    @property
    def url(self) -> str:
        """socks5://ADDRESS:PORT"""
        return f"socks5://{self.address}:{self.port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            conn.settimeout(10)
            upstream = self._handshake(conn)
            if upstream is not None:
                _relay(conn, upstream)
        except OSError:
            pass  # the client went away
        finally:
            conn.close()
            if upstream is not None:
                upstream.close()

    def _handshake(self, conn: socket.socket) -> socket.socket | None:
        version, count = _read(conn, 2)
        methods = _read(conn, count)
        if version != 5 or 0 not in methods:
            conn.sendall(b"\x05\xff")
            return None
        conn.sendall(b"\x05\x00")
        version, command, _, kind = _read(conn, 4)
        if kind == 1:
            kind_name, host = "ipv4", str(ipaddress.IPv4Address(_read(conn, 4)))
        elif kind == 4:
            kind_name, host = "ipv6", str(ipaddress.IPv6Address(_read(conn, 16)))
        elif kind == 3:
            kind_name, host = "domain", _read(conn, _read(conn, 1)[0]).decode("ascii", "replace")
        else:
            conn.sendall(b"\x05\x08\x00\x01" + bytes(6))  # address type not supported
            return None
        port = int.from_bytes(_read(conn, 2), "big")
        with self._lock:
            self.requests.append((kind_name, host, port))
        if version != 5 or command != 1:
            conn.sendall(b"\x05\x07\x00\x01" + bytes(6))  # command not supported
            return None
        try:
            upstream = socket.create_connection((host, port), timeout=5)
        except OSError:
            conn.sendall(b"\x05\x05\x00\x01" + bytes(6))  # connection refused
            return None
        conn.sendall(b"\x05\x00\x00\x01" + bytes(6))
        return upstream

    def start(self) -> Socks5Proxy:
        """Start accepting in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting and close the listening socket."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> Socks5Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:  # bounded: each turn reads at least a byte, or the peer closed
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("the client closed the connection")
        data += chunk
    return data


def _relay(a: socket.socket, b: socket.socket, idle: float = 10.0) -> None:
    """Copy bytes both ways until either side closes or nothing moves for `idle` seconds."""
    a.setblocking(False)
    b.setblocking(False)
    with selectors.DefaultSelector() as selector:
        selector.register(a, selectors.EVENT_READ, b)
        selector.register(b, selectors.EVENT_READ, a)
        while True:
            ready = selector.select(idle)
            if not ready:
                return
            for key, _ in ready:
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    return
                key.data.setblocking(True)
                key.data.sendall(data)
                key.data.setblocking(False)


class TlsFront:
    """TLS in front of another proxy, making an https:// proxy of it: each connection's TLS is ended
    here (with `cert`, `key`) and its bytes relayed to `upstream` (HOST, PORT); counts handshakes."""

    def __init__(self, cert: Path, key: Path, upstream: tuple[str, int], address: str = "127.0.0.1") -> None:
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(cert, key)
        self.upstream = upstream
        self._sock = socket.create_server((address, 0))
        self._sock.settimeout(0.1)
        self.address = address
        self.port: int = self._sock.getsockname()[1]
        self.handshakes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="tls-front")

    @property
    def url(self) -> str:
        """https://ADDRESS:PORT"""
        return f"https://{self.address}:{self.port}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            tls = self._context.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
        self.handshakes += 1
        try:
            upstream = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            tls.close()
            return
        back = threading.Thread(target=_pump, args=(upstream, tls), daemon=True)
        back.start()
        _pump(tls, upstream)
        back.join(timeout=10)
        tls.close()
        upstream.close()

    def start(self) -> TlsFront:
        """Start accepting in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting and close the listening socket."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> TlsFront:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from `source` to `sink` until `source` ends (or either fails), then end `sink`'s side."""
    try:
        while True:  # bounded by the peer: each turn reads bytes, or the stream ended
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
