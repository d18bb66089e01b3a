"""The crawl cycle's steps (generate, fetch, updatedb, invertlinks, rank, dedup, index) as background
jobs: each runs the `harvestman` command of that step in a process of its own, its state kept in
ROOT/<id>/jobs/<job>.json."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError, HarvestmanError
from harvestman.serve.layout import JOB_ID, CrawlPaths, new_id, read_json, write_json
from harvestman.serve.procs import alive, start_time

JOB_TYPES = ("generate", "fetch", "updatedb", "invertlinks", "rank", "dedup", "index")
_SEGMENT = r"^[0-9A-Za-z_.-]{1,64}$"
_ORDERS = ("bfs", "dfs", "score", "indegree", "opic", "pagerank")
MAX_MESSAGE = 2000


class UnknownJob(HarvestmanError):
    """No job with this id in this crawl."""


def _int(options: dict[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    value = options.get(name, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"job option {name!r} wants an integer between {low} and {high}, got {value!r}")
    return value


def job_args(job_type: str, options: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The step's command-line arguments after `harvestman STEP DIR`, from the request's options
    (each checked: a job runs nothing a request spells out)."""
    import re

    allowed = {
        "generate": {"top_n", "max_per_host", "order"},
        "fetch": {"segment"},
        "updatedb": {"segment"},
        "invertlinks": {"ignore_internal"},
        "rank": {"algorithm", "damping", "iterations"},
        "dedup": {"distance"},
        "index": {"rebuild"},
    }
    if job_type not in allowed:
        raise ConfigError(f"job type must be one of {', '.join(JOB_TYPES)}, got {job_type!r}")
    unknown = sorted(set(options) - allowed[job_type])
    if unknown:
        raise ConfigError(f"unknown option {unknown[0]!r} for a {job_type} job")
    args: list[str] = []
    if job_type == "generate":
        args += ["--top-n", str(_int(options, "top_n", 1000, 1, 10_000_000))]
        args += ["--max-per-host", str(_int(options, "max_per_host", 0, 0, 10_000_000))]
        if "order" in options:
            if options["order"] not in _ORDERS:
                raise ConfigError(f"job option 'order' must be one of {', '.join(_ORDERS)}")
            args += ["--order", str(options["order"])]
    elif job_type in ("fetch", "updatedb"):
        segment = options.get("segment")
        if segment is not None:
            if not isinstance(segment, str) or not re.fullmatch(_SEGMENT, segment):
                raise ConfigError("job option 'segment' must be a segment id")
            args.append(segment)
        if job_type == "fetch":  # the crawl's own address rules apply to its fetch steps too
            args += [f"--allow-net={net}" for net in settings.get("allow_net", [])]
            args += [f"--resolve={pin}" for pin in settings.get("resolve", [])]
            args.append("--quiet")
    elif job_type == "invertlinks" and options.get("ignore_internal") is True:
        args.append("--ignore-internal")
    elif job_type == "rank":
        if "algorithm" in options:
            if options["algorithm"] not in ("pagerank", "indegree", "opic"):
                raise ConfigError("job option 'algorithm' must be pagerank, indegree or opic")
            args += ["--algorithm", str(options["algorithm"])]
        if "damping" in options:
            damping = options["damping"]
            if not isinstance(damping, int | float) or isinstance(damping, bool) or not 0 < damping < 1:
                raise ConfigError("job option 'damping' must be a number between 0 and 1")
            args += ["--damping", str(float(damping))]
        iterations = _int(options, "iterations", None, 1, 1000)
        if iterations is not None:
            args += ["--iterations", str(iterations)]
    elif job_type == "dedup":
        args += ["--distance", str(_int(options, "distance", 3, 0, 64))]
    elif job_type == "index" and options.get("rebuild") is True:
        args.append("--rebuild")
    return args


class JobRunner:
    """Starts jobs and reports their state; a job whose process outlived a server restart is reported
    failed (its outcome unknown), never left 'running' for ever."""

    def __init__(self, on_end: Callable[[CrawlPaths], None] | None = None) -> None:
        self._on_end = on_end
        self._lock = threading.Lock()
        self._mine: set[str] = set()  # jobs this server started (others' threads died with their server)

    def start(
        self, paths: CrawlPaths, job_type: str, options: dict[str, Any], settings: dict[str, Any], db: str
    ) -> str:
        """Queue a job (it starts at once, after the crawl's jobs before it); its id."""
        args = job_args(job_type, options, settings)
        paths.jobs.mkdir(exist_ok=True)
        job_id = new_id()
        cmd = [sys.executable, "-m", "harvestman.app.cli", job_type, str(paths.crawl_dir), *args]
        if db:
            cmd += ["--db", db]
        state = {
            "id": job_id,
            "type": job_type,
            "state": "queued",
            "message": "",
            "started": None,
            "ended": None,
            "pid": 0,
            "pid_start": None,
            "options": options,
        }
        write_json(paths.jobs / f"{job_id}.json", state)
        self._mine.add(job_id)
        threading.Thread(
            target=self._run, args=(paths, job_id, cmd), daemon=True, name=f"harvestman-job-{job_id}"
        ).start()
        return job_id

    def _run(self, paths: CrawlPaths, job_id: str, cmd: list[str]) -> None:
        path = paths.jobs / f"{job_id}.json"
        with self._lock:  # one step at a time: they share the crawl's database and segments
            state = read_json(path)
            state.update(state="running", started=time.time())
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            state.update(pid=proc.pid, pid_start=start_time(proc.pid))
            write_json(path, state)
            output, _ = proc.communicate()
            text = output.decode("utf-8", errors="replace").strip()
            state.update(
                state="finished" if proc.returncode == 0 else "failed",
                ended=time.time(),
                message=text[-MAX_MESSAGE:] or f"exit status {proc.returncode}",
            )
            write_json(path, state)
        if self._on_end is not None:
            self._on_end(paths)

    def get(self, paths: CrawlPaths, job_id: str) -> dict[str, Any]:
        """A job's state: id, type, state (queued, running, finished, failed), message, started, ended."""
        path = paths.jobs / f"{job_id}.json"
        if not JOB_ID.fullmatch(job_id) or not path.is_file():
            raise UnknownJob(f"no job {job_id!r} in this crawl")
        state = read_json(path)
        if (
            state["state"] in ("queued", "running")
            and job_id not in self._mine
            and not alive(int(state.get("pid", 0)), state.get("pid_start"))
        ):
            state.update(
                state="failed", message="the server restarted while the job ran: its outcome is unknown"
            )
        return {key: state.get(key) for key in ("id", "type", "state", "message", "started", "ended")}


def job_ids(folder: Path) -> list[str]:
    """The ids of a crawl's jobs."""
    return sorted(p.stem for p in (folder / "jobs").glob("*.json") if JOB_ID.fullmatch(p.stem))
