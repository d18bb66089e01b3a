"""`harvestman replay` without a focus strategy: the bfs baseline, judged by the same focus as the
strategy it is compared with (the crawl's own saved focus, or `--focus FILE --bfs`); and the harvest
curve's PNG with its title and axis labels."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvestman.batch.harvest import harvest_curve, plot_png
from tests.support.crawlcheck import run_cli
from tests.support.nginx import NginxServer, free_port
from tests.support.topicweb import build_topic_web, made_up_docs

HOST = "127.62.0.1"
TOPICS = ("alpha", "beta", "gamma")
TARGET = "alpha"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NginxServer, Path]]:
    base = tmp_path_factory.mktemp("baseline")
    docs = made_up_docs((*TOPICS, "notes"), 30)
    build_topic_web(base / "site" / HOST, {t: docs[t][:24] for t in TOPICS}, target=TARGET,
                    hub_docs=docs["notes"][:4], pages_per_region=8, hidden_regions=1, hubs=4)
    examples = base / "examples"
    for topic in TOPICS:
        (examples / topic).mkdir(parents=True)
        for n, (_, text) in enumerate(docs[topic][24:]):
            (examples / topic / f"{n}.txt").write_text(text, encoding="utf-8")
    with NginxServer(base / "site", [HOST], free_port(HOST)) as server:
        yield server, examples


def _focus_file(folder: Path, examples: Path) -> Path:
    path = folder / "focus-soft.toml"
    path.write_text("\n".join([
        'mode = "soft"', "[[topic]]", f'name = "{TARGET}"', f'positive = ["{examples}/{TARGET}/*.txt"]',
        f'negative = ["{examples}/beta/*.txt", "{examples}/gamma/*.txt"]']) + "\n", encoding="utf-8")
    return path


def _crawl(server: NginxServer, out: Path, *args: str) -> None:
    done = run_cli("crawl", server.url(HOST, "/"), "--out", str(out), "--allow-net", "127.62.0.0/16", "-q",
                   "--workers", "1", *args)
    assert done.returncode == 0, done.stderr


def _replay(folder: Path, report: Path, *args: str) -> tuple[dict[str, float], list[dict[str, object]]]:
    done = run_cli("replay", str(folder), "--out", str(report), *args)
    assert done.returncode == 0, done.stderr
    summary = json.loads((report / "summary.json").read_text())
    order = [json.loads(line) for line in (report / "order.jsonl").open()]
    return summary, order


def _png_rows(png: bytes) -> tuple[int, int, list[bytes]]:
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    start = png.index(b"IDAT") + 4
    raw = zlib.decompress(png[start:start + int.from_bytes(png[start - 8:start - 4], "big")])
    stride = 1 + width * 3
    return width, height, [raw[r * stride + 1:(r + 1) * stride] for r in range(height)]


def _inked(rows: list[bytes], top: int, bottom: int, left: int, right: int) -> int:
    """Black pixels (text) in the box."""
    black = b"\x00\x00\x00"
    return sum(rows[y][x * 3:x * 3 + 3] == black for y in range(top, bottom) for x in range(left, right))


def test_the_curve_has_a_title_and_axis_labels() -> None:
    series = [[p.harvest_rate for p in harvest_curve([True, False] * 50)]]
    width, height, rows = _png_rows(plot_png(series, title="harvest curve, replay: bfs"))
    assert _inked(rows, 0, 30, 0, width) > 100  # the title above the plot
    assert _inked(rows, height - 20, height, 60, width) > 100  # "PAGES FETCHED" under the ticks
    assert _inked(rows, 40, height - 50, 0, 20) > 100  # the y label, upwards along the axis
    _, _, plain = _png_rows(plot_png(series))
    assert _inked(plain, 0, 10, 60, width) == 0  # no title asked, none drawn


@pytest.mark.timeout(600)
def test_replay_without_a_strategy_is_the_bfs_baseline_under_the_same_judge(
        site: tuple[NginxServer, Path], tmp_path: Path) -> None:
    server, examples = site
    focus = _focus_file(tmp_path, examples)
    _crawl(server, tmp_path / "full")
    # An unfocused crawl has nothing to judge its pages with: said, not a curve of zeros.
    done = run_cli("replay", str(tmp_path / "full"))
    assert done.returncode == 2 and "was not crawled with --focus" in done.stderr, done.stderr
    bare = run_cli("replay", str(tmp_path / "full"), "--bfs")
    assert bare.returncode == 2 and "--bfs replays the bfs order judged by a focus" in bare.stderr
    # The focus's strategy and its bfs baseline over the same pages, judged alike.
    soft, soft_order = _replay(tmp_path / "full", tmp_path / "soft", "--focus", str(focus))
    bfs, bfs_order = _replay(tmp_path / "full", tmp_path / "bfs", "--focus", str(focus), "--bfs")
    assert bfs["relevant_stored"] == soft["relevant_stored"] > 0
    assert bfs["fetched"] == soft["fetched"] == bfs["stored_pages"]  # no budget: every page, both ways
    assert bfs["relevant_found"] == bfs["relevant_stored"]  # bfs reaches every page: recall 1
    assert [row["depth"] for row in bfs_order] == sorted(row["depth"] for row in bfs_order)  # breadth first
    assert sum(bool(row["relevant"]) for row in bfs_order) == bfs["relevant_found"]  # judged, not blank
    assert {row["url"] for row in bfs_order} == {row["url"] for row in soft_order}
    assert [row["url"] for row in bfs_order] != [row["url"] for row in soft_order]  # orders differ
    # Within a budget the focus finds relevant pages sooner than bfs (what the baseline is for).
    budget = str(int(bfs["fetched"]) // 3)
    soft_cut, _ = _replay(tmp_path / "full", tmp_path / "soft-cut", "--focus", str(focus), "--budget", budget)
    bfs_cut, _ = _replay(tmp_path / "full", tmp_path / "bfs-cut", "--focus", str(focus), "--bfs",
                         "--budget", budget)
    assert soft_cut["relevant_found"] > bfs_cut["relevant_found"]
    # A focused crawl replays as bfs judged by the focus it was crawled with, no file named.
    _crawl(server, tmp_path / "live", "--focus", str(focus))
    done = run_cli("replay", str(tmp_path / "live"))
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "live" / "replay-bfs" / "summary.json").read_text())
    assert summary["relevant_stored"] > 0 and summary["relevant_found"] == summary["relevant_stored"]
    _, _, rows = _png_rows((tmp_path / "live" / "replay-bfs" / "harvest.png").read_bytes())
    assert _inked(rows, 0, 30, 0, 640) > 100
