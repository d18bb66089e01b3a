"""Served jobs: their typed specs, checked from a request's options, kept as JSON and read back; the
job's own process (serve/jobrunner.py) on a crawl that is not there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harvestman.model.errors import EXIT_USAGE, ConfigError
from harvestman.serve.jobspecs import (
    JOB_TYPES,
    DedupJob,
    FetchJob,
    GenerateJob,
    IndexJob,
    InvertlinksJob,
    RankJob,
    UpdatedbJob,
    job_spec,
    job_type,
    spec_from_json,
    spec_json,
)
from harvestman.serve.layout import CrawlPaths, write_json


def test_a_request_without_options_takes_the_steps_defaults() -> None:
    assert [job_spec(name, {}) for name in JOB_TYPES] == [
        GenerateJob(top_n=1000, max_per_host=0, order=None),
        FetchJob(None),
        UpdatedbJob(None),
        InvertlinksJob(False),
        RankJob("pagerank", 0.85, None),
        DedupJob(3),
        IndexJob(False),
    ]


@pytest.mark.parametrize(
    ("job", "options", "spec"),
    [
        ("generate", {"top_n": 5, "max_per_host": 2, "order": "opic"}, GenerateJob(5, 2, "opic")),
        ("fetch", {"segment": "20260101120000"}, FetchJob("20260101120000")),
        ("updatedb", {"segment": "20260101120000"}, UpdatedbJob("20260101120000")),
        ("invertlinks", {"ignore_internal": True}, InvertlinksJob(True)),
        ("rank", {"algorithm": "opic", "damping": 0.5, "iterations": 7}, RankJob("opic", 0.5, 7)),
        ("rank", {"damping": 1 - 1e-9}, RankJob("pagerank", 1 - 1e-9, None)),
        ("dedup", {"distance": 0}, DedupJob(0)),
        ("index", {"rebuild": True}, IndexJob(True)),
    ],
)
def test_specs_survive_their_state_file(job: str, options: dict[str, Any], spec: Any) -> None:
    made = job_spec(job, options)
    assert made == spec and job_type(made) == job
    stored = json.loads(json.dumps(spec_json(made)))
    assert stored["type"] == job
    assert spec_from_json(stored) == made


@pytest.mark.parametrize(
    ("job", "options", "message"),
    [
        ("rm -rf", {}, "job type must be one of generate, fetch, updatedb"),
        ("generate", {"top_n": "x"}, "job option 'top_n' wants an integer between 1 and 10000000"),
        ("generate", {"top_n": 0}, "job option 'top_n' wants an integer"),
        ("generate", {"top_n": True}, "job option 'top_n' wants an integer"),
        ("generate", {"max_per_host": -1}, "job option 'max_per_host' wants an integer between 0"),
        ("generate", {"order": "random"}, "job option 'order' must be one of bfs, dfs"),
        ("generate", {"segment": "x"}, "unknown option 'segment' for a generate job"),
        ("fetch", {"segment": "../../etc"}, "job option 'segment' must be a segment id"),
        ("fetch", {"segment": 12}, "job option 'segment' must be a segment id"),
        ("fetch", {"allow_net": ["0.0.0.0/0"]}, "unknown option 'allow_net' for a fetch job"),
        ("updatedb", {"segment": "a" * 65}, "job option 'segment' must be a segment id"),
        ("invertlinks", {"ignore_internal": "yes"}, "job option 'ignore_internal' must be true or false"),
        ("rank", {"algorithm": "hits"}, "job option 'algorithm' must be pagerank, indegree or opic"),
        ("rank", {"damping": 1}, "job option 'damping' must be a number between 0 and 1"),
        ("rank", {"damping": False}, "job option 'damping' must be a number between 0 and 1"),
        ("rank", {"iterations": 1001}, "job option 'iterations' wants an integer between 1 and 1000"),
        ("dedup", {"distance": 65}, "job option 'distance' wants an integer between 0 and 64"),
        ("index", {"rebuild": 1}, "job option 'rebuild' must be true or false"),
    ],
)
def test_bad_options_are_refused_saying_why(job: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        job_spec(job, options)


def test_an_edited_state_file_is_checked_again() -> None:
    with pytest.raises(ConfigError, match="segment id"):
        spec_from_json({"type": "fetch", "segment": "../../../etc"})
    with pytest.raises(ConfigError, match="job type"):
        spec_from_json({"segment": "x"})


def test_a_job_on_no_crawl_fails_with_a_one_line_error(tmp_path: Path) -> None:
    paths = CrawlPaths(tmp_path / "0123456789ab")
    paths.jobs.mkdir(parents=True)
    write_json(paths.meta, {"seeds": [], "settings": {}})
    write_json(paths.jobs / "aaaaaaaaaaaa.json", {"id": "aaaaaaaaaaaa", "spec": spec_json(IndexJob())})
    done = subprocess.run(
        [sys.executable, "-m", "harvestman.serve.jobrunner", str(paths.folder), "aaaaaaaaaaaa"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("harvestman: error: ") and done.stderr.count("\n") == 1, done.stderr
