"""Head-only crawling over HTTP/2 against nginx (TLS + h2 on loopback): bytes nginx sent per page
($bytes_sent) against the page's head size, connections per host, and pages/s head-only vs full.

    .venv/bin/python bench/head_only.py [--pages 400] [--hosts 4] [--concurrency 32]

Pages have heads of 5-30 KB and bodies of 100-1,000 KB (random, seeded). Both runs use the same
H2Transport (one connection per host), so the difference is the stop alone; the full run is also
done with libcurl (its own HTTP/2), the transport of the default crawl.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harvestman.fetch.h2_transport import H2Transport
from harvestman.fetch.stop import parse_stop
from harvestman.fetch.transport import CurlTransport, Transport, TransportSettings
from harvestman.model.records import HttpRequest, StopCondition
from harvestman.net.addrguard import AddressGuard
from tests.support.partialpages import head_length, head_page
from tests.support.tlsfixture import TlsNginx, make_pki


async def crawl(transport: Transport, urls: list[str], stop: StopCondition | None, concurrency: int) -> float:
    queue = list(reversed(urls))

    async def worker() -> None:
        while queue:
            url = queue.pop()
            response = await transport.fetch(HttpRequest(url, stop=stop))
            assert response.status == 200, response.status

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    rng = random.Random(7)
    hosts = [f"127.64.0.{i + 1}" for i in range(args.hosts)]
    with tempfile.TemporaryDirectory(prefix="head-only-") as tmp_name:
        tmp = Path(tmp_name)
        pki = make_pki(tmp / "pki")
        certs = {ip: pki.server_cert(ip, names=("bench.test",), ips=(ip,)) for ip in hosts}
        heads: dict[str, int] = {}
        sizes: dict[str, int] = {}
        paths = []
        for n in range(args.pages):
            ip = hosts[n % len(hosts)]
            html = head_page(rng.randint(5_000, 30_000), rng.randint(100_000, 1_000_000), seed=n)
            path = tmp / "www" / ip / f"p{n}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(html)
            paths.append((ip, f"/p{n}.html"))
            heads[f"/p{n}.html"] = head_length(html)
            sizes[f"/p{n}.html"] = len(html.encode())
        settings = TransportSettings(user_agent="head-only-bench", guard=AddressGuard(("127.0.0.0/8",)),
                                     ca_file=str(pki.ca.cert))
        with TlsNginx(tmp / "www", certs) as srv:
            urls = [srv.url(ip, path) for ip, path in paths]

            async def run(kind: str) -> tuple[float, int]:
                transport: Transport = (CurlTransport(settings) if kind == "curl-full"
                                        else H2Transport(settings))
                try:
                    stop = parse_stop("head") if kind == "h2-head" else None
                    await crawl(transport, urls[: 2 * len(hosts)], stop, args.concurrency)  # warm up
                    elapsed = await crawl(transport, urls, stop, args.concurrency)
                    opened = transport.connections_opened if isinstance(transport, H2Transport) else -1
                    return elapsed, opened
                finally:
                    await transport.aclose()

            results = {}
            for kind in ("h2-head", "h2-full", "curl-full"):
                before = len(srv.requests())
                elapsed, opened = asyncio.run(run(kind))
                entries = srv.wait_for_requests(before + len(urls) + 2 * len(hosts))[before + 2 * len(hosts):]
                results[kind] = (elapsed, opened, entries)
        print(f"{args.pages} pages over {args.hosts} hosts, heads 5-30 KB, pages 100-1,000 KB, "
              f"concurrency {args.concurrency}; nginx TLS + HTTP/2 on loopback")
        mean_page = statistics.mean(sizes.values())
        for kind, (elapsed, opened, entries) in results.items():
            sent = [e.total_sent for e in entries]
            conns = len({(e.server_addr, e.connection) for e in entries})
            rate = len(entries) / elapsed
            print(f"  {kind:9s}: {rate:7.0f} pages/s, bytes sent/page mean {statistics.mean(sent):9,.0f}"
                  f" (page mean {mean_page:,.0f}), connections {conns} for {args.hosts} hosts"
                  + (f" (opened {opened})" if opened >= 0 else ""))
        head_entries = results["h2-head"][2]
        over = [e.total_sent - heads[e.uri] for e in head_entries]
        print(f"  head-only: sent - head per page: mean {statistics.mean(over):,.0f}, max {max(over):,}"
              f" bytes (goal <= 16,384); pages over the goal: {sum(o > 16_384 for o in over)}")
        full_sent = sum(e.total_sent for e in results["h2-full"][2])
        print(f"  head-only: bytes sent / full bytes sent: "
              f"{sum(e.total_sent for e in head_entries) / full_sent:.3f}")


if __name__ == "__main__":
    main()
