"""`harvestman serve` under a running crawl: status latency, event lag, and what watching costs.

    python bench/serve_latency.py [--hosts 4] [--pages 3000] [--runs 3] [--poll 0.2]

An nginx-served site (tests/support/sitegen.py, ~4 KB pages) is crawled through the API of a real
server (uvicorn on loopback, tests/support/serveproc.py), in alternating runs:
- watched: an SSE client reads GET /api/crawls/{id}/events (as the web page does) and a poller asks
  GET /api/crawls/{id} every --poll seconds;
- unwatched: nobody asks anything until the crawl's process has ended.
Printed: the status request's latency (p50/p99, watched runs), the event lag (an event's `time`, set by
the crawl when it happened, to the moment the SSE client has read it; p50/p99), and the crawl's pages/s
(fetched pages over the span of their fetch events), median of each kind of run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.nginx import NginxServer, free_port
from tests.support.serveproc import ServeProcess, wait_for
from tests.support.sitegen import generate_site


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def one_run(
    server: ServeProcess,
    seeds: list[str],
    expected: int,
    watched: bool,
    poll: float,
    latencies: list[float],
    lags: list[float],
) -> float:
    """One crawl of the site; its pages/s. Watched runs add to `latencies` and `lags`."""
    settings = {"scope": "any"}  # the server's --allow-net is the crawl's
    crawl_id = server.call("POST", "/api/crawls", {"seeds": seeds, "settings": settings}).json()["id"]
    folder = server.root / crawl_id
    stop = threading.Event()
    threads: list[threading.Thread] = []
    if watched:

        def sse() -> None:
            for kind, data, received in server.stream(f"/api/crawls/{crawl_id}/events", timeout=600):
                if kind == "fetched":
                    lags.append(received - float(data["time"]))

        def poller() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                server.call("GET", f"/api/crawls/{crawl_id}")
                latencies.append(time.perf_counter() - started)
                time.sleep(poll)

        threads = [threading.Thread(target=sse), threading.Thread(target=poller)]
        for thread in threads:
            thread.start()
    wait_for(lambda: (folder / "exit.json").is_file(), 600, "the crawl to end", every=0.2)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    summary = server.call("GET", f"/api/crawls/{crawl_id}").json()
    if summary["state"] != "finished" or summary["pages"] != expected:
        raise SystemExit(
            f"run went wrong: {summary['state']} {summary['pages']}/{expected} {summary['message']}"
        )
    server.call("DELETE", f"/api/crawls/{crawl_id}?confirm=true")
    return float(summary["pages_per_second"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--pages", type=int, default=3000, help="pages a host")
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (alternating)")
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between status requests")
    args = parser.parse_args()
    hosts = [f"127.4.0.{i + 1}" for i in range(args.hosts)]
    with tempfile.TemporaryDirectory(prefix="hm-serve-bench-") as tmp:
        port = free_port(hosts[0])
        spec = generate_site(
            Path(tmp) / "site", hosts, args.pages, 8, seed=11, port=port, broken_per_host=0, page_bytes=4000
        )
        latencies: list[float] = []
        lags: list[float] = []
        rates: dict[bool, list[float]] = {True: [], False: []}
        with NginxServer(Path(tmp) / "site", hosts, port), ServeProcess(
            Path(tmp) / "root", extra=("--allow-net", "127.0.0.0/8")
        ) as server:
            for run in range(2 * args.runs):
                watched = run % 2 == 0
                rate = one_run(
                    server, list(spec.seeds), len(spec.reachable), watched, args.poll, latencies, lags
                )
                rates[watched].append(rate)
                print(
                    f"run {run + 1}: {'watched' if watched else 'unwatched'} {rate:.0f} pages/s", flush=True
                )
    print(f"\nsite: {len(spec.reachable)} pages on {args.hosts} hosts; {args.runs} runs of each kind")
    print(
        f"status latency (GET /api/crawls/ID, every {args.poll} s, {len(latencies)} requests): "
        f"p50 {_pct(latencies, 0.5) * 1000:.1f} ms, p99 {_pct(latencies, 0.99) * 1000:.1f} ms"
    )
    print(
        f"event lag (crawl -> SSE client, {len(lags)} events): "
        f"p50 {_pct(lags, 0.5) * 1000:.1f} ms, p99 {_pct(lags, 0.99) * 1000:.1f} ms"
    )
    watched, alone = statistics.median(rates[True]), statistics.median(rates[False])
    print(f"pages/s: unwatched {alone:.0f}, watched {watched:.0f} "
          f"(median; watched/unwatched {watched / alone:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
