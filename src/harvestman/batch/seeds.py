"""Nutch's seed format: one URL a line, then optional tab-separated `key=value` fields; `score=`
(or Nutch's `nutch.score=`) is the URL's starting score, every other key its metadata."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harvestman.crawl.seeding import seed_url
from harvestman.model.errors import ConfigError, InvalidUrlError

SEED_SCORE = 1.0  # a seed's score when its line names none (Nutch's db.score.injected)
SCORE_KEYS = ("score", "nutch.score")


@dataclass(frozen=True, slots=True)
class SeedLine:
    """One seed: a normalized URL, its starting score and its metadata."""

    url: str
    score: float = SEED_SCORE
    metadata: tuple[tuple[str, str], ...] = field(default=())


def parse_seed_line(line: str, *, where: str = "", max_length: int = 2048) -> SeedLine | None:
    """The seed on one line (None for a blank line or a '#' comment); a bad line is a ConfigError
    naming `where` (FILE:LINE)."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    at = f"{where}: " if where else ""
    url, *fields = text.split("\t")
    raw = url.strip()
    try:
        normalized = seed_url(raw, max_length=max_length)  # the crawl's and the API's check
    except InvalidUrlError as exc:
        raise ConfigError(f"{at}bad seed URL {raw[:200]!r}: {exc}") from None
    score = SEED_SCORE
    metadata: list[tuple[str, str]] = []
    for item in fields:
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{at}bad seed field {item[:200]!r}: want key=value after a tab")
        if key in SCORE_KEYS:
            try:
                score = float(value)
            except ValueError:
                score = math.nan
            if not math.isfinite(score):
                raise ConfigError(f"{at}bad seed score {value[:50]!r}: want a number")
        else:
            metadata.append((key, value.strip()))
    return SeedLine(normalized, score, tuple(metadata))


def parse_seed_lines(lines: Iterable[str], *, source: str = "", max_length: int = 2048) -> list[SeedLine]:
    """Every seed of `lines` (a file's, or URLs given on the command line); the first bad line is a
    ConfigError naming `source` and its line number."""
    seeds = []
    for number, line in enumerate(lines, 1):
        seed = parse_seed_line(line, where=f"{source}:{number}" if source else "", max_length=max_length)
        if seed is not None:
            seeds.append(seed)
    return seeds


def read_seed_file(path: Path, *, max_length: int = 2048) -> list[SeedLine]:
    """The seeds of a seed file (Nutch's format)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"cannot read seed file {path}: {exc.strerror}") from None
    return parse_seed_lines(text.splitlines(), source=str(path), max_length=max_length)
