"""Running a crawl, for the command line and the server alike: the settings of a later run, the
checks made before anything is created, the failures a resumed run mends, the run with its signals,
and its verdict and exit status. Messages go to stderr; nothing here parses a command line."""

from __future__ import annotations

import dataclasses
import ipaddress
import signal
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harvestman.batch.cycle import crawl_exists
from harvestman.batch.fetch_segment import FetchedSegment, SegmentFetch
from harvestman.batch.generate import check_score_source
from harvestman.crawl.exposition import MetricsSource
from harvestman.crawl.job import CrawlJob
from harvestman.crawl.plugins import load_plugins, with_plugin_scorer
from harvestman.crawl.stats import CrawlStats, deferred_note
from harvestman.crawl.workers import NO_POLICIES, Policies
from harvestman.index.stages import with_stages
from harvestman.launch.metrics import MetricsFile, MetricsServer
from harvestman.launch.progress import ProgressDisplay, print_summary
from harvestman.launch.seeds import check_seeds, run_verdict
from harvestman.launch.status import crawl_report
from harvestman.model.config import CrawlConfig, config_from_mapping, merge_settings
from harvestman.model.errors import ConfigError
from harvestman.model.records import RunVerdict
from harvestman.model.settings import MACHINE_LOCAL
from harvestman.policy.ordering import RANKED_ORDERINGS, check_ordering
from harvestman.policy.revive import Revival
from harvestman.store.crawldir import CrawlDir, read_settings, revive
from harvestman.store.factory import check_location, is_postgres
from harvestman.store.warc import recover


def say(line: str) -> None:
    """A line for the user, on stderr."""
    print(f"harvestman: {line}", file=sys.stderr)


def resumed_config(*given: Mapping[str, Any]) -> CrawlConfig:
    """The settings of `--resume`: those stored with the crawl, with `given` (a config file's, then
    the options', then the command's own) on top; each stored setting `given` changes is said. A
    crawl with no stored settings yet (killed before its seeds were stored) takes `given` alone."""
    cfg, _ = merge_settings({}, *given)
    crawl = CrawlDir.of(cfg)
    check_location(crawl.location)
    if not crawl.holds_crawl():
        return cfg
    merged, notes = merge_settings(crawl.stored_settings(), *given)
    for note in notes:
        say(f"{note} (kept for later runs)")
    return merged


def worker_config(db: str, out: Path, local: Mapping[str, Any]) -> CrawlConfig:
    """The settings of a machine joining a shared crawl: the crawl's, stored in its database, and
    this machine's own `local` ones (processes, address rules, display)."""
    if not is_postgres(db):
        raise ConfigError("harvestman worker joins a crawl kept in PostgreSQL (--db postgresql://...); a "
                          "SQLite crawl database belongs to the one `harvestman crawl` that holds its lock")
    crawl = CrawlDir(out, db)
    with crawl.read() as store:
        stored = read_settings(store, machine=False)
        starter = read_settings(store)  # with the address rules of the machine that started it
    if not stored:
        raise ConfigError(f"no crawl in {crawl.name} yet: start one with "
                          f"`harvestman crawl SEED... --db {crawl.name} --out DIR`")
    wrong = sorted(set(local) - MACHINE_LOCAL)
    if wrong:
        raise ConfigError(f"a worker takes the crawl's settings from its database, not {wrong[0]!r}")
    crawl_net = config_from_mapping({name: starter[name] for name in ("allow_net", "resolve")
                                     if name in starter})
    own, _ = merge_settings(stored, local, {"out_dir": out, "db": db}, same_run=True)
    cfg, taken = with_crawl_net(own, crawl_net)
    if taken:
        say(f"worker: taking the crawl's network rules, stored by the machine that started it: {taken}")
    return cfg


def with_crawl_net(cfg: CrawlConfig, crawl: CrawlConfig) -> tuple[CrawlConfig, str]:
    """A machine's settings `cfg` with the address rules of its `crawl`, which are the crawl's verdict
    on every URL (a URL one machine refused would end gone for all): the crawl's `--allow-net`
    ranges when the machine gave none, and its `--resolve` pins (a pin of the machine's own wins for
    its host and port); with what was taken, as options ('' when nothing). A ConfigError when the
    machine's own `--allow-net` leaves out a range of the crawl's."""
    lacking = [net for net in crawl.allow_net if not _covered(net, cfg.allow_net)]
    if cfg.allow_net and lacking:
        raise ConfigError(f"this machine's --allow-net {' '.join(cfg.allow_net)} leaves out the crawl's "
                          f"{' '.join(lacking)}: the URLs there it refused would end gone for the whole "
                          "crawl; give an --allow-net that covers them, or none to take the crawl's")
    own_pins = {(pin.host.lower(), pin.port) for pin in cfg.resolve}
    pins = [pin for pin in crawl.resolve if (pin.host.lower(), pin.port) not in own_pins]
    taken = [f"--allow-net {net}" for net in lacking] + [f"--resolve {pin.curl_form()}" for pin in pins]
    widened = dataclasses.replace(cfg, allow_net=(*cfg.allow_net, *lacking), resolve=(*cfg.resolve, *pins))
    return widened, ", ".join(taken)


def _covered(net: str, ranges: Collection[str]) -> bool:
    inner = ipaddress.ip_network(net, strict=False)
    outers = (ipaddress.ip_network(outer, strict=False) for outer in ranges)
    return any(inner.version == outer.version and inner.subnet_of(outer) for outer in outers)  # type: ignore[arg-type]


def check_before_creating(cfg: CrawlConfig) -> None:
    """Refuse, before anything is created, a run that cannot start: `--out` naming a file, a
    database that cannot be opened here, no usable seed, or `--resume` of a folder that holds no
    crawl. Notes on the seeds go to stderr."""
    crawl = CrawlDir.of(cfg)
    if crawl.path.exists() and not crawl.path.is_dir():
        raise ConfigError(f"--out {crawl.path} is a file, not a folder: name a new or an existing "
                          "output folder")
    check_location(crawl.location)
    check_renderer(cfg)
    seeds = check_seeds(cfg.seeds, max_length=cfg.max_url_length)
    for note in seeds.notes:
        say(note)
    if seeds.valid:
        return
    if not cfg.resume:
        raise ConfigError("no valid seed URL to start from")
    if not crawl.holds_crawl():
        raise ConfigError(f"nothing to resume: {crawl.path} holds no crawl (no crawl.db there); name "
                          "seed URLs to start one")


def check_renderer(cfg: CrawlConfig, *, joining: bool = False) -> None:
    """Refuse a run that renders pages on a machine that cannot (no browser, no Playwright): its
    pages would fail as `render`. `joining`: a worker, told it takes the crawl's --render."""
    if cfg.render == "never" and not cfg.render_rules:
        return
    from harvestman.fetch.browser import check_browser  # only a crawl that renders loads it

    try:
        check_browser(cfg.browser_path)
    except ConfigError as exc:
        if not joining:
            raise
        raise ConfigError(f"this machine cannot render pages, and the crawl does (--render "
                          f"{cfg.render}): {exc}; its pages are left to the machines that can") from None


def revive_failures(cfg: CrawlConfig, retry: Collection[str] = ()) -> Revival:
    """Queue again the failed URLs of a resumed crawl that `cfg` mends (or `retry` names); said."""
    crawl = CrawlDir.of(cfg)
    store = crawl.open(cfg)
    try:
        revived = revive(store, cfg, retry)
    finally:
        store.close()
    if revived.urls and not cfg.quiet:
        say(revived.note())
    return revived


def close_left_open(out: Path) -> None:
    """Finish the WARC files a stopped or killed run of this machine left open in `out` (each cut
    to its last whole record), saying so."""
    closed = recover(out / "warc")
    if closed:
        say(f"closed {len(closed)} WARC files a stopped run left open in {out / 'warc'}, each cut to "
            f"its last whole record: {', '.join(p.name for p in closed)}")


@contextmanager
def stopped_by_signals(stop: Callable[..., None], *, say_so: bool) -> Iterator[None]:
    """While inside: Ctrl-C or SIGTERM stops the run, the first letting fetches in flight finish, a
    second abandoning them (resumable); `say_so` says so on the first. The handlers are put back."""
    signals = [0]

    def on_signal(_sig: int, _frame: object) -> None:
        signals[0] += 1
        stop(abandon=signals[0] > 1)
        if signals[0] == 1 and say_so:
            say("stopping after the fetches in flight (Ctrl-C again to abandon them)")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def fetch_segment_run(folder: Path, cfg: CrawlConfig, segment: Path) -> FetchedSegment:
    """Fetch a segment (`harvestman fetch`, a served fetch job), with a progress display unless
    `cfg.quiet`; Ctrl-C (or SIGTERM) stops it, resumable."""
    run = SegmentFetch(segment, cfg, with_stages(NO_POLICIES, cfg))
    with stopped_by_signals(run.stop, say_so=False):
        run.start()
        if cfg.quiet or cfg.log_json:
            run.job.wait()
        else:
            with ProgressDisplay(run.job.stats):
                run.job.wait()
    return run.wait()


def finish(cfg: CrawlConfig, stats: CrawlStats, verdict: RunVerdict) -> int:
    """After a run: the summary, then (on stderr) what waits beyond --max-wait and why nothing was
    fetched, if so; the exit status."""
    if not cfg.quiet and not cfg.log_json:
        print_summary(crawl_report(cfg.out_dir, cfg.db))
    if stats.deferred:
        say(deferred_note(stats.deferred, stats.deferred_until, cfg.max_wait, stats.deferred_revisits))
    for line in verdict.lines:
        say(line)
    return verdict.exit_status


def check_crawl_order(cfg: CrawlConfig) -> None:
    """Refuse a continuous crawl ordered by scores a rank job has not stored (--order pagerank)."""
    if cfg.ordering not in RANKED_ORDERINGS:
        return
    folder = Path(cfg.out_dir)
    if not crawl_exists(folder, cfg.db):
        raise ConfigError(f"--order {cfg.ordering} orders by the scores `harvestman rank` stores: crawl "
                          f"first, then run harvestman rank {folder} --algorithm {cfg.ordering}")
    with CrawlDir.of(cfg).read() as store:
        check_score_source(store, cfg.ordering, folder)


@contextmanager
def _closing(outlets: list[MetricsServer | MetricsFile]) -> Iterator[None]:
    try:
        yield
    finally:
        for outlet in outlets:
            outlet.close()


def run_crawl(cfg: CrawlConfig, policies: Policies = NO_POLICIES, *, join: bool = False,
              retry_failed: Collection[str] = (), metrics_file: Path | None = None) -> int:
    """Run one crawl with a progress display and a summary; Ctrl-C stops it cleanly.

    `policies`: a link scorer and a fetch schedule, for every process of the crawl (the page stages
    its settings ask for are added here). With `join`, work on a crawl started elsewhere (its seeds
    are not given again). A resumed crawl first queues again the failures its settings mend, and
    those of the `retry_failed` error classes. The run's metrics are served on `cfg.metrics_port`
    and written to `metrics_file` (launch/metrics.py), if so.
    """
    # Plugins load here first, so that an unknown or broken one is refused before anything starts.
    check_ordering(cfg.ordering, with_plugin_scorer(policies.scorer, load_plugins(cfg.plugins)))
    if join:
        out = Path(cfg.out_dir)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out} is a file, not a folder: name a new or an existing output folder")
        check_renderer(cfg, joining=True)
        close_left_open(out)
    else:
        check_before_creating(cfg)
        if cfg.resume and CrawlDir.of(cfg).holds_crawl():
            close_left_open(Path(cfg.out_dir))
            revive_failures(cfg, retry_failed)
    # Bound before the run starts: a port taken is refused before anything is crawled.
    outlets: list[MetricsServer | MetricsFile] = [MetricsServer(cfg.metrics_port)] if cfg.metrics_port else []
    if metrics_file is not None:
        outlets.append(MetricsFile(metrics_file))
    job = CrawlJob(cfg, verdict=lambda folder: run_verdict(folder, cfg.db), join=join,
                   policies=with_stages(policies, cfg), metrics=bool(outlets))
    with stopped_by_signals(job.stop, say_so=not cfg.quiet), _closing(outlets):
        job.start()  # before the display's and the metrics' threads: worker processes are forked
        for outlet in outlets:
            outlet.start(lambda: MetricsSource(job.stats.snapshot(), job.processes))
        try:
            if cfg.quiet or cfg.log_json:
                job.wait()
            else:
                with ProgressDisplay(job.stats):
                    job.wait()
        except BaseException:  # the run must not go on unwatched
            job.stop(abandon=True)
            job.wait()
            raise
    status = job.result()
    assert status.verdict is not None
    return finish(cfg, job.stats, status.verdict)
