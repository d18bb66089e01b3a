"""Sizes as people write them (model/sizes.py): one reader for every size setting, on the command
line, in a config file and in a stop condition, with one clear line for a size that is none."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvestman.fetch.stop import parse_stop
from harvestman.model.config import CrawlConfig, load_toml
from harvestman.model.errors import ConfigError
from harvestman.model.settings import SETTING, SIZE_SETTINGS
from harvestman.model.sizes import parse_size
from tests.support.crawlcheck import run_cli


@pytest.mark.parametrize(("text", "size"), [
    ("1048576", 1048576), ("0", 0), ("10MiB", 10 * 2**20), ("10mib", 10 * 2**20), ("10 MiB", 10 * 2**20),
    ("10M", 10 * 2**20), ("512k", 512 * 1024), ("512K", 512 * 1024), ("512KiB", 512 * 1024),
    ("10MB", 10_000_000), ("10kB", 10_000), ("1GB", 10**9), ("2GiB", 2 * 2**30), ("1T", 2**40),
    ("1.5k", 1536), ("0.5MiB", 2**19), ("100B", 100), (" 7 ", 7), (".5k", 512),
])
def test_sizes_as_people_write_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MiB", "-1", "10XB", "10 Mi B", "1e6", "ten", "10MiBs", "1,5k", "0x10"])
def test_what_is_no_size_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match=r"max_size: .* is not a size \(10MiB, 512k, 1.5GB"):
        parse_size(text, "max_size")


@given(st.integers(min_value=0, max_value=2**50))
def test_a_number_of_bytes_is_itself(n: int) -> None:
    assert parse_size(str(n)) == n
    assert parse_size(f"{n}k") == n * 1024 and parse_size(f"{n}kB") == n * 1000


def test_every_size_setting_takes_sizes(tmp_path: Path) -> None:
    assert set(SETTING) >= SIZE_SETTINGS
    for name in SIZE_SETTINGS:
        assert getattr(CrawlConfig(**{name: "3MiB"}), name) == 3 * 2**20
        assert getattr(CrawlConfig(**{name: 4096}), name) == 4096  # a number stays one
        with pytest.raises(ConfigError, match=f"setting '{name}': 'lots' is not a size"):
            CrawlConfig(**{name: "lots"})
    toml = tmp_path / "crawl.toml"
    toml.write_text('[fetch]\nmax_size = "1.5MB"\n[storage]\nwarc_max_bytes = "256MiB"\n')
    cfg = CrawlConfig(**load_toml(toml))
    assert cfg.max_size == 1_500_000 and cfg.warc_max_bytes == 256 * 2**20
    with pytest.raises(ConfigError, match="max_size must be > 0"):
        CrawlConfig(max_size="0k")


def test_a_stop_condition_takes_a_size() -> None:
    assert parse_stop("bytes:64KiB").value == str(64 * 1024)
    assert parse_stop("bytes:4096").value == "4096"
    assert CrawlConfig(stop_at="bytes:1MB").stop_at == "bytes:1MB"
    with pytest.raises(ConfigError, match="is not a size"):
        CrawlConfig(stop_at="bytes:lots")
    with pytest.raises(ConfigError, match="bytes:SIZE needs a size above 0"):
        parse_stop("bytes:0k")


def test_the_command_line_reads_sizes_and_refuses_bad_ones(tmp_path: Path) -> None:
    bad = run_cli("crawl", "http://127.3.30.1:9/", "--out", str(tmp_path / "out"), "--max-size", "10XB")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == (
        "harvestman crawl: error: argument --max-size: '10XB' is not a size (10MiB, 512k, 1.5GB or a "
        "number of bytes; units k, M, G, T and KiB, MiB, GiB, TiB are of 1024, kB, MB, GB, TB of 1000)")
    assert not (tmp_path / "out").exists()
    # A size given on the command line is what the crawl stores and a resume takes back.
    out = tmp_path / "ok"
    done = run_cli("crawl", "http://127.3.30.1:9/", "--out", str(out), "--allow-net", "127.0.0.0/8",
                   "--max-size", "64KiB", "--retries", "0", "--quiet")
    assert "is not a size" not in done.stderr and (out / "crawl.db").exists(), done.stderr
    again = run_cli("crawl", "--out", str(out), "--resume", "--max-size", "1MiB", "--quiet")
    assert "--max-size: 1048576 replaces the crawl's stored 65536" in again.stderr, again.stderr
    help_text = run_cli("crawl", "--help").stdout
    assert "--max-size SIZE" in help_text and "(default 10MiB)" in help_text
