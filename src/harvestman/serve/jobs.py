"""The crawl cycle's steps (generate, fetch, updatedb, invertlinks, rank, dedup, index) as background
jobs: each runs in a process of its own (serve/jobrunner.py), its state and its typed spec
(serve/jobspecs.py) kept in ROOT/<id>/jobs/<job>.json."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from harvestman.model.errors import HarvestmanError
from harvestman.serve.jobspecs import JobSpec, job_type, spec_json
from harvestman.serve.layout import JOB_ID, CrawlPaths, new_id, read_json, write_json
from harvestman.serve.procs import alive, start_time

MAX_MESSAGE = 2000


class UnknownJob(HarvestmanError):
    """No job with this id in this crawl."""


class JobRunner:
    """Starts jobs and reports their state; a job whose process outlived a server restart is reported
    failed (its outcome unknown), never left 'running' for ever."""

    def __init__(self, on_end: Callable[[CrawlPaths], None] | None = None) -> None:
        self._on_end = on_end
        self._lock = threading.Lock()
        self._mine: set[str] = set()  # jobs this server started (others' threads died with their server)

    def start(self, paths: CrawlPaths, spec: JobSpec, network: dict[str, Any]) -> str:
        """Queue a job (it starts at once, after the crawl's jobs before it); its id. The job runs
        with `network` (the crawl's network settings under the server's ceiling) over those stored
        with the crawl."""
        paths.jobs.mkdir(exist_ok=True)
        job_id = new_id()
        cmd = [sys.executable, "-m", "harvestman.serve.jobrunner", str(paths.folder), job_id]
        state = {
            "id": job_id,
            "type": job_type(spec),
            "state": "queued",
            "message": "",
            "started": None,
            "ended": None,
            "pid": 0,
            "pid_start": None,
            "spec": spec_json(spec),
            "network": network,
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
