"""The live progress display and the end-of-run summary, drawn with rich on stderr."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from harvestman.crawl.stats import CrawlStats

# rich is imported where it draws: a quiet run (scripts, tests) never loads it.
if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def human_bytes(count: float) -> str:
    """1234567 -> '1.2 MB'."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(count) < 1000 or unit == "TB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"


# The live line's fields in the order shown, and the order they are kept in: a narrow terminal
# drops them from the end of the second list.
_SHOWN = ("name", "rate", "fetched", "queued", "retrying", "failed", "skipped", "in_flight", "bytes", "busy")
_KEPT = ("rate", "fetched", "retrying", "queued", "failed", "in_flight", "bytes", "skipped", "name", "busy")


class ProgressDisplay:
    """A one-line live view of a running crawl: pages/s, fetched, failed, bytes, busy hosts.

    The line fits the terminal's width (fields are dropped when it is narrow), and says when the
    crawl is only waiting: for a retry, or for a host's turn.
    """

    def __init__(self, stats: CrawlStats, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.live import Live

        self._stats = stats
        self._console = console or Console(stderr=True)
        self._live = Live(
            get_renderable=self._render,
            console=self._console,
            refresh_per_second=4,
            transient=True,
        )

    def _render(self) -> Text:
        return self.render(time.time(), self._console.width)

    def render(self, now: float, width: int) -> Text:
        """The progress line at time `now`, at most `width - 1` columns (so it never wraps)."""
        from rich.text import Text

        stats = self._stats
        fields: dict[str, Text] = {
            "name": Text("harvestman", "bold"),
            "rate": Text(f"{stats.pages_per_second(now):.1f} pages/s"),
            "fetched": Text.assemble(("pages ", "green"), f"{stats.fetched:,}"),  # PageCounts
            "queued": Text.assemble(("queued ", "blue"), f"{stats.queued:,}"),
            "failed": Text.assemble(("failed ", "red"), f"{stats.failed:,}"),
            "skipped": Text.assemble(("skipped ", "yellow"), f"{stats.skipped:,}"),
            "in_flight": Text.assemble(("in flight ", "cyan"), f"{stats.in_flight:,}"),
            "bytes": Text(human_bytes(stats.bytes)),
            "busy": Text(f"busy hosts {len(stats.busy_hosts):,}"),
        }
        waiting = stats.next_attempt_at - now if stats.in_flight == 0 else 0.0
        due = f"next attempt in {waiting:.0f} s" if waiting >= 1 else ""
        if stats.retrying:
            fields["retrying"] = Text.assemble(("retrying ", "magenta"), f"{stats.retrying:,}",
                                               f", {due}" if due else "")
        elif due and stats.queued:
            fields["retrying"] = Text(f"waiting, {due}", "magenta")
        keep = [name for name in _KEPT if name in fields]
        while len(keep) > 1 and sum(len(fields[n]) + 2 for n in keep) - 2 > width - 1:
            keep.pop()
        return Text("  ").join(fields[name] for name in _SHOWN if name in keep)

    def __enter__(self) -> ProgressDisplay:
        self._live.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._live.__exit__(exc_type, exc, tb)


SUMMARY_HOSTS = 10  # hosts listed in the text summary; `status --json` lists them all


def print_summary(report: dict[str, Any], console: Console | None = None) -> None:
    """Print a crawl report (see report.crawl_report) as tables: totals, busiest hosts, errors."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"crawl {report['dir']}", show_header=False)
    table.add_column("what")
    table.add_column("value", justify="right")
    for state, count in report["states"].items():
        table.add_row(f"URLs {state}", f"{count:,}")
    table.add_row("URLs with a response", f"{report['responses']:,}")
    table.add_row("hosts", f"{report['host_count']:,}")
    table.add_row("bytes on the wire (URLs' last fetches)", human_bytes(report["wire_bytes"]))
    bandwidth = report.get("bandwidth")
    if bandwidth:
        table.add_row("body bytes (as transferred)", human_bytes(bandwidth["body_wire_bytes"]))
        table.add_row("body bytes (decoded)", human_bytes(bandwidth["decoded_bytes"]))
        if bandwidth["partial_pages"] or bandwidth["saved_bytes"]:
            table.add_row("pages read in part", f"{bandwidth['partial_pages']:,}")
            table.add_row("bytes saved against full fetches", human_bytes(bandwidth["saved_bytes"]))
    if report["first_fetch"]:
        table.add_row("first fetch", report["first_fetch"])
        table.add_row("last fetch", report["last_fetch"])
        table.add_row("elapsed", f"{report['elapsed_seconds']:,.1f} s")
    runs = report.get("runs")
    if runs:  # from the events logs (launch/status.py run_figures)
        last = runs["last"]
        table.add_row("runs", f"{runs['count']:,}")
        table.add_row("time the runs ran", f"{runs['seconds']:,.1f} s")
        table.add_row("responses in all runs", f"{runs['responses']:,}")
        table.add_row("bytes in all runs", human_bytes(runs["bytes"]))
        table.add_row("last run", f"{last['started']}, {last['seconds']:,.1f} s")
        table.add_row("last run: responses (304s)", f"{last['responses']:,} ({last['not_modified']:,})")
        table.add_row("last run: bytes", human_bytes(last["bytes"]))
        table.add_row("last run: pages/s", f"{last['pages_per_second']:.1f}")
    rate = "pages/s (all runs, over the time they ran)" if runs else "pages/s"
    table.add_row(rate, f"{report['pages_per_second']:.1f}")
    focus = report.get("focus")  # a focused crawl (launch/status.py)
    if focus:
        table.add_row("pages scored by the focus", f"{focus['scored_pages']:,}")
        for topic, row in focus["topics"].items():
            table.add_row(f"  {topic}: relevant (>= {focus['threshold']:g}) of pages",
                          f"{row['relevant']:,} of {row['pages']:,}")
    console.print(table)
    hosts = sorted(report["hosts"].items(), key=lambda kv: (-kv[1]["urls"], kv[0]))
    if hosts:
        shown = hosts[:SUMMARY_HOSTS]
        title = "hosts"
        if len(shown) < len(hosts):
            title = f"the {len(shown)} hosts with most URLs, of {len(hosts):,}"
        busiest = Table(title=title, box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
        busiest.add_column("host", no_wrap=True)
        for name in ("URLs", "fetched", "redirect", "gone", "unfetched", "errors", "bytes"):
            busiest.add_column(name, justify="right", no_wrap=True)
        for name, host in shown:
            states = host["states"]
            redirects = states["redirect_perm"] + states["redirect_temp"]
            busiest.add_row(name, f"{host['urls']:,}", f"{states['fetched']:,}", f"{redirects:,}",
                            f"{states['gone']:,}", f"{states['unfetched']:,}", f"{host['errors']:,}",
                            human_bytes(host["wire_bytes"]))
        console.print(busiest)
    if report["errors"]:
        errors = Table(title="errors by class")
        errors.add_column("class")
        errors.add_column("URLs", justify="right")
        for name, count in report["errors"].items():
            errors.add_row(name, f"{count:,}")
        console.print(errors)
