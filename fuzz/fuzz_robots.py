"""atheris harness for harvestman.policy.robots: parse arbitrary bytes, then match paths taken from them.

Run: python fuzz/fuzz_robots.py [libFuzzer options] [CORPUS_DIR ...], e.g. -max_total_time=60.
"""

from __future__ import annotations

import math
import sys

import atheris

with atheris.instrument_imports(include=["harvestman"]):
    from harvestman.policy.robots import RobotsRules, path_of, rules_for_response

AGENTS = ("harvestman/0.1 (+https://example.com/bot)", "*", " / ")
MAX_PATHS = 16  # lines whose values are matched as paths: bounds the work of one input


def TestOneInput(data: bytes) -> None:
    """One input: a robots.txt body; its own lines' values are matched as paths and URLs."""
    rules = RobotsRules.parse(data)
    cut = RobotsRules.parse(data, max_bytes=len(data) // 2)
    text = data.decode("utf-8", "surrogateescape")
    # Values of the file's own lines are the paths most likely to hit its patterns' edge cases.
    candidates = ["/", "/robots.txt", text[:200]]
    for line in text.splitlines()[:MAX_PATHS]:
        candidates.append(line.partition(":")[2].strip())
    agents = [*AGENTS, *(c for c in candidates[3:5] if c)]  # agent names from the file's own lines
    for candidate in candidates:
        path = path_of(candidate)
        assert path.startswith("/"), (candidate, path)
        for agent in agents:
            verdict = rules.allowed(candidate, agent)
            assert isinstance(verdict, bool)
            assert rules.allowed(candidate, agent) is verdict  # the per-agent cache changes nothing
            assert isinstance(cut.allowed("http://h" + path, agent), bool)
            if path == "/robots.txt":
                assert verdict, candidate
    for agent in agents:
        delay = rules.crawl_delay(agent)
        assert delay is None or (math.isfinite(delay) and delay >= 0), delay
    status = data[0] * 3 if data else 200
    got, ttl, _defer = rules_for_response(status, data, "")
    assert ttl > 0 and isinstance(got.allowed("/x", AGENTS[0]), bool)


def main() -> None:
    """Run libFuzzer with the command line's options."""
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
