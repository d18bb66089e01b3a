"""The crawls a server runs: one folder ROOT/<id> and one process each, found again after a restart."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError, HarvestmanError
from harvestman.serve.ceiling import NetCeiling
from harvestman.serve.layout import CRAWL_ID, CrawlPaths, new_id, read_json, write_json
from harvestman.serve.pgdbs import PostgresCrawls
from harvestman.serve.procs import alive, signal_if_alive, start_time

RUNNING_STATES = ("running", "stopping")


class UnknownCrawl(HarvestmanError):
    """No crawl with this id (or an id that cannot be one)."""


class CrawlBusy(HarvestmanError):
    """An action that needs the crawl stopped (or running) found it otherwise."""


@dataclass(frozen=True, slots=True)
class CrawlInfo:
    """A served crawl as its files describe it now."""

    id: str
    paths: CrawlPaths
    seeds: tuple[str, ...]
    settings: dict[str, Any]
    created: float
    state: str  # running, stopping, stopped, finished, failed
    message: str
    db: str  # the crawl database's URL ('' for the folder's crawl.db)


class CrawlManager:
    """Creates, starts, stops, resumes and deletes the crawls under `root`; their state is in their
    folders only (serve.json, exit.json), so any server over the same root sees the same crawls.
    Every crawl runs bounded by `ceiling`, checked again at each start (a resume too)."""

    def __init__(self, root: Path, db: str = "", ceiling: NetCeiling | None = None) -> None:
        self.root = Path(root)
        self.ceiling = ceiling or NetCeiling()
        self.root.mkdir(parents=True, exist_ok=True)
        self._postgres = PostgresCrawls(db) if db else None
        self._children: dict[str, subprocess.Popen[bytes]] = {}  # reaped here; others belong to init
        self._lock = threading.Lock()

    def paths(self, crawl_id: str) -> CrawlPaths:
        """The files of a crawl that exists; UnknownCrawl for any other id."""
        if not CRAWL_ID.fullmatch(crawl_id):
            raise UnknownCrawl(f"no crawl {crawl_id!r}")
        paths = CrawlPaths(self.root / crawl_id)
        if not paths.meta.is_file():
            raise UnknownCrawl(f"no crawl {crawl_id!r}")
        return paths

    def ids(self) -> list[str]:
        """Every crawl's id, newest first."""
        found = [p.parent.name for p in self.root.glob("*/serve.json") if CRAWL_ID.fullmatch(p.parent.name)]
        return sorted(found, key=lambda i: self._created(i), reverse=True)

    def _created(self, crawl_id: str) -> float:
        try:
            return float(read_json(self.root / crawl_id / "serve.json").get("created", 0))
        except (OSError, ValueError):
            return 0.0

    def create(self, seeds: list[str], settings: dict[str, Any]) -> str:
        """Make a crawl's folder and start its process; its id. A CeilingError (nothing made) when
        `settings` would widen the server's network rules."""
        settings = self.ceiling.bound(settings)
        crawl_id = new_id()
        paths = CrawlPaths(self.root / crawl_id)
        paths.folder.mkdir()
        paths.crawl_dir.mkdir()
        meta: dict[str, Any] = {
            "id": crawl_id,
            "seeds": seeds,
            "settings": settings,
            "created": time.time(),
            "runs": 0,
            "stop_requested": False,
            "pid": 0,
            "pid_start": None,
        }
        if self._postgres is not None:
            meta["db_name"] = self._postgres.create(crawl_id)
        write_json(paths.meta, meta)
        self._spawn(crawl_id, paths)
        return crawl_id

    def _db_url(self, meta: dict[str, Any]) -> str:
        name = str(meta.get("db_name", ""))
        if not name:
            return ""
        if self._postgres is None:
            raise ConfigError("this crawl is kept in PostgreSQL: start the server with --db")
        return self._postgres.url(name)

    def _spawn(self, crawl_id: str, paths: CrawlPaths) -> None:
        with self._lock:
            meta = read_json(paths.meta)
            # Bounded again: the server may run with narrower rules than when the crawl was made, or
            # serve.json may have been written by hand; the runner takes these settings and no others.
            meta["settings"] = self.ceiling.bound(dict(meta.get("settings", {})))
            paths.exit.unlink(missing_ok=True)
            meta["runs"] = int(meta.get("runs", 0)) + 1
            meta["stop_requested"] = False
            # The runner reads the database URL from serve.json; a password in it stays in the folder
            # (mode 0700) as it would in the server's own command line.
            meta["db_url"] = self._db_url(meta)
            write_json(paths.meta, meta)
            with paths.events.open("ab") as events, paths.stderr.open("ab") as errors:
                # A session of its own: the crawl outlives the server, and a Ctrl-C of the server's
                # terminal does not reach it.
                proc = subprocess.Popen(
                    [sys.executable, "-m", "harvestman.serve.runner", str(paths.folder)],
                    stdin=subprocess.DEVNULL,
                    stdout=events,
                    stderr=errors,
                    cwd=paths.folder,
                    start_new_session=True,
                )
            self._children[crawl_id] = proc
            meta["pid"] = proc.pid
            meta["pid_start"] = start_time(proc.pid)
            write_json(paths.meta, meta)

    def info(self, crawl_id: str) -> CrawlInfo:
        """The crawl's seeds, settings and state now."""
        paths = self.paths(crawl_id)
        child = self._children.get(crawl_id)
        if child is not None and child.poll() is not None:  # reap it, so its pid is free again
            self._children.pop(crawl_id, None)
        with self._lock:  # not half-way through a start (pid not yet recorded)
            meta = read_json(paths.meta)
        return self._info_unlocked(crawl_id, paths, meta)

    def _info_unlocked(self, crawl_id: str, paths: CrawlPaths, meta: dict[str, Any]) -> CrawlInfo:
        state, message = _state(meta, paths)
        return CrawlInfo(
            crawl_id,
            paths,
            tuple(meta.get("seeds", ())),
            dict(meta.get("settings", {})),
            float(meta.get("created", 0)),
            state,
            message,
            self._db_url(meta),
        )

    def stop(self, crawl_id: str) -> CrawlInfo:
        """Ask the crawl to finish the fetches in flight and end (its SIGTERM); a second stop abandons
        them (the crawl stays resumable either way). A crawl that has ended is left as it is."""
        paths = self.paths(crawl_id)
        with self._lock:
            meta = read_json(paths.meta)
            pid, started = int(meta.get("pid", 0)), meta.get("pid_start")
            if not alive(pid, started):  # ended already: a finished crawl stays finished
                return self._info_unlocked(crawl_id, paths, meta)
            meta["stop_requested"] = True
            write_json(paths.meta, meta)
        # The run takes a first SIGTERM as "finish the fetches in flight", a second as "abandon them".
        signal_if_alive(pid, started, signal.SIGTERM)
        return self.info(crawl_id)

    def resume(self, crawl_id: str) -> CrawlInfo:
        """Start the crawl's process again on its folder (it continues where it ended)."""
        info = self.info(crawl_id)
        if info.state in RUNNING_STATES:
            raise CrawlBusy(f"crawl {crawl_id} is {info.state}: stop it before resuming it")
        self._spawn(crawl_id, info.paths)
        return self.info(crawl_id)

    def delete(self, crawl_id: str) -> None:
        """Stop the crawl for good and remove its folder (and its database)."""
        paths = self.paths(crawl_id)
        meta = read_json(paths.meta)
        pid, started = int(meta.get("pid", 0)), meta.get("pid_start")
        if signal_if_alive(pid, started, signal.SIGKILL):  # the folder goes: nothing left to finish
            deadline = time.monotonic() + 10
            child = self._children.pop(crawl_id, None)
            if child is not None:
                child.wait(timeout=10)
            while alive(pid, started) and time.monotonic() < deadline:
                time.sleep(0.05)
        # Worker processes share the runner's session: end any left over.
        _kill_session(pid)
        if self._postgres is not None and meta.get("db_name"):
            self._postgres.drop(str(meta["db_name"]))
        shutil.rmtree(paths.folder, ignore_errors=True)


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session `sid` (a crawl's worker processes), found in /proc."""
    if sid <= 0:
        return
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="ascii", errors="replace")
            fields = text[text.rfind(")") + 2 :].split()
            if int(fields[3]) == sid:
                signal_if_alive(int(stat.parent.name), None, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def _state(meta: dict[str, Any], paths: CrawlPaths) -> tuple[str, str]:
    """running | stopping while the process lives; else stopped | finished | failed from exit.json."""
    stop_requested = bool(meta.get("stop_requested"))
    if alive(int(meta.get("pid", 0)), meta.get("pid_start")):
        return ("stopping", "stopping after the fetches in flight") if stop_requested else ("running", "")
    try:
        status = int(read_json(paths.exit)["status"])
    except (OSError, ValueError, KeyError, TypeError):
        if not paths.meta.is_file() or int(meta.get("pid", 0)) == 0:
            return "failed", "the crawl did not start"
        if stop_requested:
            return "stopped", "stopped; resume to continue"
        return "failed", "the crawl's process ended without a status (killed?); resume to continue"
    if stop_requested:
        return "stopped", "stopped; resume to continue"
    if status == 0:
        return "finished", ""
    return "failed", _last_error(paths) or f"the crawl ended with exit status {status}"


def _last_error(paths: CrawlPaths) -> str:
    try:
        lines = paths.stderr.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:500] if lines else ""
