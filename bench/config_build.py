"""What building a CrawlConfig costs: the defaults, a command line's worth of settings, and the merge
of stored settings with what is given now (`merge_settings`, as `--resume` does it).

    python bench/config_build.py [--rounds 2000]

A crawl builds its config once a run, so only a gross change matters. To compare two trees, run it
with each on the path: `PYTHONPATH=OTHER/src python bench/config_build.py`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from harvestman.model.config import CrawlConfig, config_from_mapping, crawl_settings, merge_settings

GIVEN: dict[str, Any] = {"seeds": ["http://a.test/"], "out_dir": "out", "max_depth": 3, "delay": 0.5,
                         "allow_net": ["127.0.0.0/8"], "resolve": ["a.test:80:127.0.0.1"],
                         "include": ["/docs/"], "max_size": "5MiB", "render": "auto",
                         "extra_headers": {"X-Team": "crawl"}}


def best_of(work: Callable[[], object], rounds: int) -> float:
    """The fastest of five runs of `rounds` calls, in microseconds a call."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            work()
        times.append((time.perf_counter() - start) / rounds * 1e6)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds
    cfg = config_from_mapping(GIVEN)
    stored = crawl_settings(cfg)
    cases: dict[str, Callable[[], object]] = {
        "CrawlConfig()": CrawlConfig,
        "config_from_mapping(10 settings)": lambda: config_from_mapping(GIVEN),
        "merge_settings(stored, given)": lambda: merge_settings(stored, {"delay": 1.0, "retries": 5}),
        "cfg.fetch (a section)": lambda: cfg.fetch,
    }
    for name, work in cases.items():
        print(f"{name:40} {best_of(work, rounds):8.1f} µs")


if __name__ == "__main__":
    main()
