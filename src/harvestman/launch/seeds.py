"""What the command tells a user about a run's seeds: notes before it starts, why it fetched nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harvestman.crawl.seeding import seed_url, with_scheme
from harvestman.model.errors import EXIT_OK, InvalidUrlError, exit_status_of, failure_help
from harvestman.model.records import RunVerdict, UrlRecord, UrlState
from harvestman.net.addrguard import parse_ip
from harvestman.policy.revive import refused_address
from harvestman.store.crawldir import CrawlDir
from harvestman.store.frontier import CrawlDb

MAX_NAMED = 10  # seeds named one line each; the rest are counted in one more line
_SUCCESS = (UrlState.FETCHED, UrlState.NOT_MODIFIED)
_REDIRECTS = (UrlState.REDIRECT_TEMP, UrlState.REDIRECT_PERM)


@dataclass(frozen=True, slots=True)
class SeedCheck:
    """How many seeds can start a crawl, a note on each seed that was taken as something else, and
    why each refused one is (the command line skips them, the API refuses the request: same words)."""

    valid: int
    notes: tuple[str, ...]
    refused: tuple[str, ...] = ()


def check_seeds(seeds: Iterable[str], *, max_length: int) -> SeedCheck:
    """Read the seeds as the engine will: note each one without a scheme (http:// is assumed) and
    each that is no fetchable URL (the engine skips it); count the usable ones."""
    valid = 0
    notes: list[str] = []
    refused: list[str] = []
    for raw in seeds:
        text = raw.strip()
        try:
            url = seed_url(text, max_length=max_length)
        except InvalidUrlError as exc:
            refused.append(f"seed {text!r}: not a URL harvestman can fetch: {exc}")
            notes.append(f"skipped {refused[-1]}")
            continue
        valid += 1
        if with_scheme(text) != text:
            notes.append(f"seed {text!r} has no scheme: http:// assumed ({url})")
    return SeedCheck(valid, tuple(_capped(notes, "notes")), tuple(refused))


def run_verdict(folder: Path, db: str = "") -> RunVerdict:
    """Exit status 0 when the run fetched a page (or stopped before its seeds were decided); else
    the status for its seeds' failures, with one line per seed saying why, and a hint."""
    with CrawlDir(Path(folder), db).read() as frontier:
        counts = frontier.counts()
        if any(counts[state] for state in _SUCCESS):
            return RunVerdict(EXIT_OK)
        failures: list[UrlRecord] = []
        for seed in (frontier.get_meta("seeds") or "").split("\n"):
            record = frontier.get(seed) if seed else None
            if record is None:
                continue
            record = _where_it_ended(record, frontier)
            if record.state == UrlState.UNFETCHED or record.state in _SUCCESS:
                return RunVerdict(EXIT_OK)  # stopped (Ctrl-C) before this seed was decided
            failures.append(record)
    if not failures:
        return RunVerdict(EXIT_OK)
    status = exit_status_of(failure_help(r.error_class).exit_status for r in failures)
    lines = [f"nothing was fetched: {'the seed' if len(failures) == 1 else 'every seed'} failed"]
    lines.extend(_capped([_explain(record) for record in failures], "failed seeds (see download.log)"))
    return RunVerdict(status, tuple(lines))


def _where_it_ended(record: UrlRecord, frontier: CrawlDb) -> UrlRecord:
    """A seed's own record, or, when it redirected without an error, the record of its target."""
    if record.state in _REDIRECTS and not record.error_class and record.final_url:
        return frontier.get(record.final_url) or record
    return record


def _explain(record: UrlRecord) -> str:
    """`URL: why (error class); hint` for one failed seed."""
    error_class = record.error_class or (f"http_{record.http_status}" if record.http_status else "unknown")
    why = record.error_message or (f"HTTP {record.http_status}" if record.http_status else "failed")
    hint = failure_help(error_class).hint
    if "{address}" in hint:
        hint = hint.format(address=_refused_range(record))
    return f"{record.url}: {why} ({error_class})" + (f"; {hint}" if hint else "")


def _refused_range(record: UrlRecord) -> str:
    """The single-address CIDR a refused connection went to, for --allow-net; 'CIDR' when unknown."""
    addr = parse_ip(refused_address(record))
    return f"{addr}/{addr.max_prefixlen}" if addr is not None else "CIDR"


def _capped(lines: list[str], what: str) -> list[str]:
    """The first MAX_NAMED lines, and a count of the rest."""
    if len(lines) <= MAX_NAMED:
        return lines
    return [*lines[:MAX_NAMED], f"... and {len(lines) - MAX_NAMED} more {what}"]
