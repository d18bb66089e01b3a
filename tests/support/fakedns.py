"""A private name server for DNS failure tests: no query ever leaves loopback.

`FakeDns` answers UDP queries on a loopback address, port 53, from a table: a name maps to an IPv4
address, or to a failure (`NXDOMAIN`, `SERVFAIL`, or `SILENT`: never answered). Names not in the table
get NXDOMAIN. Every query is logged with its arrival time, so a test can count lookups and check
that a name pinned with `--resolve` never reached the resolver.

The crawler under test resolves through glibc, which reads /etc/resolv.conf. `namespace_prefix`
builds a wrapper that runs a command in a private mount namespace where /etc/resolv.conf is a file
naming only this server (the host's file is untouched). `require_private_resolver` probes the whole
path once and skips the test when it cannot work here: no root for port 53 or for `unshare`, an nscd
or systemd-resolved that would answer outside the namespace.

    with FakeDns({"good.test": "127.2.0.1", "nx.test": NXDOMAIN}) as dns:
        prefix = require_private_resolver(dns, tmp_path)
        run_cli_measured("crawl", "http://good.test:8080/", ..., prefix=prefix)
        assert dns.queries_for("nx.test")
"""

from __future__ import annotations

import select
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

NXDOMAIN = "NXDOMAIN"
SERVFAIL = "SERVFAIL"
SILENT = "SILENT"
_RCODES = {NXDOMAIN: 3, SERVFAIL: 2}
_TYPE_A = 1
_POLL = 0.05  # seconds between checks of the stop flag
_MAX_LABELS = 128


@dataclass(frozen=True, slots=True)
class Query:
    """One question the server received: when (monotonic), for which name, of which type."""

    at: float
    name: str
    qtype: int


def _question(packet: bytes) -> tuple[str, int, int] | None:
    """The first question's name, type and end offset; None for a packet that is not a query."""
    offset, labels = 12, []
    for _ in range(_MAX_LABELS):
        if offset >= len(packet):
            return None
        size = packet[offset]
        if size == 0:
            break
        if size > 63:
            return None  # compression pointers do not appear in a question we ask
        labels.append(packet[offset + 1 : offset + 1 + size].decode("ascii", "replace"))
        offset += 1 + size
    else:
        return None
    offset += 1
    if offset + 4 > len(packet):
        return None
    (qtype,) = struct.unpack("!H", packet[offset : offset + 2])
    return ".".join(labels).lower(), qtype, offset + 4


class FakeDns:
    """A loopback UDP name server answering from a fixed table (see the module docstring)."""

    def __init__(self, table: Mapping[str, str], address: str = "127.53.0.1") -> None:
        self.table = {name.lower(): answer for name, answer in table.items()}
        self.address = address
        self.queries: list[Query] = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.bind((address, 53))
        except OSError as exc:
            self._sock.close()
            pytest.skip(f"cannot serve DNS on {address}:53 here ({exc.strerror}): needs root")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._sock], [], [], _POLL)
            if not ready:
                continue
            try:
                packet, client = self._sock.recvfrom(4096)
            except OSError:
                continue
            question = _question(packet)
            if question is None or len(packet) < 12:
                continue
            name, qtype, end = question
            with self._lock:
                self.queries.append(Query(time.monotonic(), name, qtype))
            reply = self._reply(packet, name, qtype, end)
            if reply is not None:
                self._sock.sendto(reply, client)

    def _reply(self, packet: bytes, name: str, qtype: int, end: int) -> bytes | None:
        answer = self.table.get(name, NXDOMAIN)
        if answer == SILENT:
            return None  # the client waits for its own timeout
        rcode = _RCODES.get(answer, 0)
        record = b""
        if rcode == 0 and qtype == _TYPE_A:
            # A pointer to the question's name, type A, class IN, TTL 60, four bytes of address.
            record = b"\xc0\x0c" + struct.pack("!HHIH", _TYPE_A, 1, 60, 4) + socket.inet_aton(answer)
        flags = 0x8180 | rcode  # a response, recursion desired and available
        head = packet[:2] + struct.pack("!HHHHH", flags, 1, 1 if record else 0, 0, 0)
        return head + packet[12:end] + record

    def queries_for(self, name: str) -> list[Query]:
        """The queries for `name` (any type), in arrival order."""
        with self._lock:
            return [q for q in self.queries if q.name == name.lower()]

    def start(self) -> FakeDns:
        """Start answering in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering and close the socket."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> FakeDns:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def namespace_prefix(resolv_conf: Path) -> list[str]:
    """A command prefix that runs the rest in a private mount namespace using `resolv_conf`.

    unshare makes the namespace's mounts private, so the bind mount is seen by the wrapped command
    alone; `exec` keeps the command in the same process (its rusage is the crawler's).
    """
    script = 'mount --bind "$0" /etc/resolv.conf && exec "$@"'
    return ["unshare", "--mount", "--", "sh", "-c", script, str(resolv_conf)]


def require_private_resolver(dns: FakeDns, folder: Path, options: str = "timeout:3 attempts:1") -> list[str]:
    """The namespace prefix for `dns`, after checking a lookup through it reaches `dns` (or skip)."""
    if shutil.which("unshare") is None or shutil.which("getent") is None:
        pytest.skip("unshare or getent is missing: no private resolver")
    resolv = folder / "resolv.conf"
    resolv.write_text(f"nameserver {dns.address}\noptions {options}\n", encoding="ascii")
    prefix = namespace_prefix(resolv)
    probe = "resolver-probe.test"
    dns.table[probe] = "127.53.53.53"
    try:
        done = subprocess.run([*prefix, "getent", "ahostsv4", probe], capture_output=True, text=True,
                              timeout=15, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("a lookup through the private resolver did not finish")
    if "127.53.53.53" not in done.stdout or not dns.queries_for(probe):
        pytest.skip(f"lookups do not go through the private resolver here: {done.stderr.strip()[:200]}")
    return prefix
