"""What a served job runs: one typed record per crawl-cycle step, checked once from a request's
options, kept as JSON in the job's state file and read back by the job's process (serve/jobrunner.py)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from harvestman.batch.generate import ORDERS
from harvestman.batch.ranks import ALGORITHMS
from harvestman.serve.settings import SettingsError

_SEGMENT = re.compile(r"^[0-9A-Za-z_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class GenerateJob:
    """Select due URLs into a new segment: at most `top_n`, `max_per_host` a host (0: no cap), best
    first by `order` (None: the crawl's ordering)."""

    top_n: int = 1000
    max_per_host: int = 0
    order: str | None = None


@dataclass(frozen=True, slots=True)
class FetchJob:
    """Fetch a segment (None: the latest), or go on fetching it."""

    segment: str | None = None


@dataclass(frozen=True, slots=True)
class UpdatedbJob:
    """Merge a fetched segment (None: the latest) into the crawl database."""

    segment: str | None = None


@dataclass(frozen=True, slots=True)
class InvertlinksJob:
    """Each URL's inlinks; `ignore_internal` leaves out links within a host."""

    ignore_internal: bool = False


@dataclass(frozen=True, slots=True)
class RankJob:
    """Score URLs by the link graph."""

    algorithm: str = "pagerank"
    damping: float = 0.85
    iterations: int | None = None


@dataclass(frozen=True, slots=True)
class DedupJob:
    """Mark duplicates: SimHashes at most `distance` bits apart are near-duplicates."""

    distance: int = 3


@dataclass(frozen=True, slots=True)
class IndexJob:
    """Bring the full-text index up to date (`rebuild`: index every page again)."""

    rebuild: bool = False


JobSpec = GenerateJob | FetchJob | UpdatedbJob | InvertlinksJob | RankJob | DedupJob | IndexJob

_KINDS: dict[str, type[JobSpec]] = {
    "generate": GenerateJob,
    "fetch": FetchJob,
    "updatedb": UpdatedbJob,
    "invertlinks": InvertlinksJob,
    "rank": RankJob,
    "dedup": DedupJob,
    "index": IndexJob,
}
JOB_TYPES = tuple(_KINDS)


def _int(options: dict[str, Any], name: str, low: int, high: int, default: int) -> int:
    value = options.get(name)
    if value is None:  # left out (or null, as spec_json writes an unset option)
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettingsError(
            f"job option {name!r} wants an integer between {low} and {high}, got {value!r}", name
        )
    return value


def _flag(options: dict[str, Any], name: str) -> bool:
    value = options.get(name, False)
    if not isinstance(value, bool):
        raise SettingsError(f"job option {name!r} must be true or false, got {value!r}", name)
    return value


def _segment(options: dict[str, Any]) -> str | None:
    segment = options.get("segment")
    if segment is not None and (not isinstance(segment, str) or not _SEGMENT.fullmatch(segment)):
        raise SettingsError("job option 'segment' must be a segment id", "segment")
    return segment


def _choice(options: dict[str, Any], name: str, choices: tuple[str, ...], message: str) -> str | None:
    value = options.get(name)
    if value is not None and value not in choices:
        raise SettingsError(message, name)
    return value


def job_spec(job_type: str, options: dict[str, Any]) -> JobSpec:
    """The job a request asks for, its options checked (a job runs nothing a request spells out)."""
    kind = _KINDS.get(job_type)
    if kind is None:
        raise SettingsError(f"job type must be one of {', '.join(JOB_TYPES)}, got {job_type!r}", "type")
    unknown = sorted(set(options) - set(kind.__dataclass_fields__))
    if unknown:
        raise SettingsError(f"unknown option {unknown[0]!r} for a {job_type} job", unknown[0])
    if kind is GenerateJob:
        return GenerateJob(
            top_n=_int(options, "top_n", 1, 10_000_000, 1000),
            max_per_host=_int(options, "max_per_host", 0, 10_000_000, 0),
            order=_choice(options, "order", ORDERS, f"job option 'order' must be one of {', '.join(ORDERS)}"),
        )
    if kind is FetchJob:
        return FetchJob(_segment(options))
    if kind is UpdatedbJob:
        return UpdatedbJob(_segment(options))
    if kind is InvertlinksJob:
        return InvertlinksJob(_flag(options, "ignore_internal"))
    if kind is RankJob:
        algorithm = _choice(
            options,
            "algorithm",
            ALGORITHMS,
            f"job option 'algorithm' must be {', '.join(ALGORITHMS[:-1])} or {ALGORITHMS[-1]}",
        )
        damping = options.get("damping", 0.85)
        if not isinstance(damping, int | float) or isinstance(damping, bool) or not 0 < damping < 1:
            raise SettingsError("job option 'damping' must be a number between 0 and 1", "damping")
        iterations = None if options.get("iterations") is None else _int(options, "iterations", 1, 1000, 1)
        return RankJob(algorithm or "pagerank", float(damping), iterations)
    if kind is DedupJob:
        return DedupJob(_int(options, "distance", 0, 64, 3))
    return IndexJob(_flag(options, "rebuild"))


def job_type(spec: JobSpec) -> str:
    """The type name of a job (what a request's `type` says)."""
    return next(name for name, kind in _KINDS.items() if isinstance(spec, kind))


def spec_json(spec: JobSpec) -> dict[str, Any]:
    """The job as a JSON object: its type and its options."""
    return {"type": job_type(spec), **asdict(spec)}


def spec_from_json(value: dict[str, Any]) -> JobSpec:
    """The job a `spec_json` object holds (checked again: the file could have been edited)."""
    options = dict(value)
    return job_spec(str(options.pop("type", None)), options)
