"""A real PostgreSQL server for tests and benchmarks, in a temporary folder, reached by a unix socket.

Usage::

    with PostgresServer() as server:          # initdb + postgres, or PostgresUnavailable saying why
        url = server.create_database()        # postgresql://postgres@/hm_1?host=/tmp/...&port=5432

The binaries are Debian's (`/usr/lib/postgresql/<version>/bin`, the newest found) or on PATH. The
cluster trusts every local connection and listens on no TCP port, only on a socket in its own folder,
so parallel runs never collide. initdb refuses to run as root: then the cluster belongs to `nobody`.
Durability is off (fsync, full-page writes): a test cluster is thrown away, and speed matters more.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
PORT = 5432  # only names the socket file (.s.PGSQL.5432) in the cluster's own folder


class PostgresUnavailable(Exception):
    """No PostgreSQL server could be started here (binaries missing, initdb failed...)."""


def find_bindir() -> Path:
    """The folder of initdb and postgres: Debian's newest version, else the one on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: [int(x) if x.isdigit() else 0 for x in Path(p).parts[-3].split(".")])
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise PostgresUnavailable("PostgreSQL is not installed (no initdb): apt-get install postgresql")


class PostgresServer:
    """One private PostgreSQL cluster: started on entering, stopped and removed on leaving."""

    def __init__(self, *, durable: bool = False, folder: Path | None = None) -> None:
        """A new cluster in a folder of its own; or (`folder`) the running server another process
        started there, whose databases this one adds to and which it never stops or removes."""
        self.bindir = find_bindir()
        self.durable = durable
        self.owned = folder is None
        self.tmp = folder or Path(tempfile.mkdtemp(prefix="hm-pg-"))
        self.data = self.tmp / "data"
        self.proc: subprocess.Popen[bytes] | None = None
        self._next_db = 0
        # initdb refuses root: run the cluster as an unprivileged user that owns the folder.
        self._user: int | None = None
        self._group: int | None = None
        if os.geteuid() == 0 and self.owned:
            nobody = pwd.getpwnam("nobody")
            self._user, self._group = nobody.pw_uid, nobody.pw_gid
            os.chown(self.tmp, nobody.pw_uid, nobody.pw_gid)
        if self.owned:
            os.chmod(self.tmp, 0o755)

    def _run(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([str(self.bindir / args[0]), *args[1:]], capture_output=True, cwd=self.tmp,
                              user=self._user, group=self._group,
                              extra_groups=[] if self._user is not None else None, check=False)

    def start(self) -> PostgresServer:
        """initdb and start the server; PostgresUnavailable (with initdb's or the log's words) if not."""
        init = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                         "--encoding=UTF8", "--locale=C", "--no-sync")
        if init.returncode != 0:
            self.remove()
            raise PostgresUnavailable(f"initdb failed: {init.stderr.decode(errors='replace').strip()[-500:]}")
        settings = [f"port={PORT}", "listen_addresses=''", f"unix_socket_directories='{self.tmp}'",
                    "max_connections=200", "shared_buffers=128MB"]
        if not self.durable:
            settings += ["fsync=off", "full_page_writes=off", "synchronous_commit=off"]
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("\n".join(settings) + "\n")
        return self.launch()

    def launch(self) -> PostgresServer:
        """Start the server on the cluster made by start() (again, after halt())."""
        log = open(self.tmp / "server.log", "ab")  # noqa: SIM115 - the server's stderr, kept until stop
        self.proc = subprocess.Popen([str(self.bindir / "postgres"), "-D", str(self.data)], stdout=log,
                                     stderr=subprocess.STDOUT, cwd=self.tmp, user=self._user,
                                     group=self._group, extra_groups=[] if self._user is not None else None,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not (self.tmp / f".s.PGSQL.{PORT}").exists() or not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.tmp / "server.log").read_text(errors="replace")[-800:]
                self.stop()
                raise PostgresUnavailable(f"postgres did not start: {tail.strip()}")
            time.sleep(0.05)
        return self

    def halt(self) -> None:
        """Stop the server as `pg_ctl stop -m fast` does (it is pg_ctl that stops it), keeping the
        cluster for launch(): sessions are ended with "terminating connection due to administrator
        command"."""
        done = self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")
        if done.returncode != 0:
            raise PostgresUnavailable(f"pg_ctl stop failed: {done.stderr.decode(errors='replace').strip()}")
        if self.proc is not None:
            self.proc.wait(STOP_TIMEOUT)
            self.proc = None

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: halt(), then launch() on the same cluster."""
        self.halt()
        self.launch()

    def _ready(self) -> bool:
        done = subprocess.run([str(self.bindir / "pg_isready"), "-h", str(self.tmp), "-p", str(PORT), "-q"],
                              check=False)
        return done.returncode == 0

    def url(self, dbname: str = "postgres") -> str:
        """The connection URL of database `dbname` (over the socket, as the trusted superuser)."""
        return f"postgresql://postgres@/{dbname}?host={self.tmp}&port={PORT}"

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        import psycopg  # only tests that need a database need psycopg

        self._next_db += 1
        name = f"hm_{os.getpid()}_{self._next_db}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder; idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # "fast" shutdown: roll back sessions, exit cleanly
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.remove()

    def remove(self) -> None:
        """Delete the cluster's folder (not another process's)."""
        if not self.owned:
            return
        with contextlib.suppress(OSError):
            shutil.rmtree(self.tmp)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
