"""The harvest-rate curve of a focused crawl (relevant pages found / pages fetched, against pages
fetched), written as CSV and as a PNG plot, for live crawls and offline replays alike.

The PNG is drawn here, with zlib and a 3x5 font (digits, capitals, a few signs): a line chart needs
no plotting library (matplotlib and its dependencies weigh ~40 MB, for one chart a crawl writes).
"""

from __future__ import annotations

import csv
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvestman.model.errors import StorageError
from harvestman.model.records import UrlRecord

CURVE_CSV = "harvest.csv"
CURVE_PNG = "harvest.png"


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """After `fetched` pages, `relevant` of them were relevant."""

    fetched: int
    relevant: int

    @property
    def harvest_rate(self) -> float:
        """Relevant pages found per page fetched."""
        return self.relevant / self.fetched if self.fetched else 0.0


def harvest_curve(relevant: Sequence[bool]) -> list[CurvePoint]:
    """The curve of a fetch order: `relevant[i]` says whether the i-th page fetched was relevant."""
    points = []
    found = 0
    for index, hit in enumerate(relevant, 1):
        found += bool(hit)
        points.append(CurvePoint(index, found))
    return points


def rate_at(curve: Sequence[CurvePoint], fetched: int) -> float:
    """The harvest rate after `fetched` pages (the last point's when the crawl stopped sooner)."""
    if not curve:
        return 0.0
    return curve[min(max(fetched, 1), len(curve)) - 1].harvest_rate


def write_curve(curve: Sequence[CurvePoint], folder: Path, *, total_relevant: int = 0,
                title: str = "harvest curve") -> tuple[Path, Path]:
    """Write DIR/harvest.csv (fetched, relevant, harvest_rate[, recall]) and DIR/harvest.png (with
    `title` above it)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / CURVE_CSV, "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(["fetched", "relevant", "harvest_rate"] + (["recall"] if total_relevant else []))
            for point in curve:
                row: list[object] = [point.fetched, point.relevant, f"{point.harvest_rate:.4f}"]
                if total_relevant:
                    row.append(f"{point.relevant / total_relevant:.4f}")
                writer.writerow(row)
        (folder / CURVE_PNG).write_bytes(plot_png([[p.harvest_rate for p in curve]], title=title))
    except OSError as exc:
        raise StorageError(f"cannot write the harvest curve in {folder}: {exc.strerror or exc}") from None
    return folder / CURVE_CSV, folder / CURVE_PNG


def focus_summary(records: Iterable[UrlRecord], threshold: float) -> dict[str, Any]:
    """For `status`: pages a focus scored, and per topic the pages judged most likely of it and
    those at or above `threshold` (relevant)."""
    scored = 0
    topics: dict[str, dict[str, Any]] = {}
    for record in records:
        if not record.topic:
            continue
        scored += 1
        row = topics.setdefault(record.topic, {"pages": 0, "relevant": 0, "relevance_sum": 0.0})
        row["pages"] += 1
        row["relevant"] += record.relevance >= threshold
        row["relevance_sum"] += record.relevance
    for row in topics.values():
        row["mean_relevance"] = round(row.pop("relevance_sum") / row["pages"], 4)
    return {"scored_pages": scored, "threshold": threshold, "topics": dict(sorted(topics.items()))}


# ----- a tiny line plotter -------------------------------------------------------------------------

_GLYPHS = {  # 3x5 glyphs, rows top to bottom, 3 bits each (4: the left column); letters upper case
    "0": (7, 5, 5, 5, 7), "1": (2, 6, 2, 2, 7), "2": (7, 1, 7, 4, 7), "3": (7, 1, 7, 1, 7),
    "4": (5, 5, 7, 1, 1), "5": (7, 4, 7, 1, 7), "6": (7, 4, 7, 5, 7), "7": (7, 1, 1, 1, 1),
    "8": (7, 5, 7, 5, 7), "9": (7, 5, 7, 1, 7), ".": (0, 0, 0, 0, 2), ",": (0, 0, 0, 2, 4),
    ":": (0, 2, 0, 2, 0), "-": (0, 0, 7, 0, 0), "/": (1, 1, 2, 4, 4), "(": (1, 2, 2, 2, 1),
    ")": (4, 2, 2, 2, 4), "%": (5, 1, 2, 4, 5), "=": (0, 7, 0, 7, 0), "_": (0, 0, 0, 0, 7),
    "A": (2, 5, 7, 5, 5), "B": (6, 5, 6, 5, 6), "C": (3, 4, 4, 4, 3), "D": (6, 5, 5, 5, 6),
    "E": (7, 4, 6, 4, 7), "F": (7, 4, 6, 4, 4), "G": (3, 4, 5, 5, 3), "H": (5, 5, 7, 5, 5),
    "I": (7, 2, 2, 2, 7), "J": (1, 1, 1, 5, 2), "K": (5, 5, 6, 5, 5), "L": (4, 4, 4, 4, 7),
    "M": (5, 7, 7, 5, 5), "N": (6, 5, 5, 5, 5), "O": (2, 5, 5, 5, 2), "P": (6, 5, 6, 4, 4),
    "Q": (2, 5, 5, 6, 3), "R": (6, 5, 6, 5, 5), "S": (3, 4, 2, 1, 6), "T": (7, 2, 2, 2, 2),
    "U": (5, 5, 5, 5, 7), "V": (5, 5, 5, 5, 2), "W": (5, 5, 7, 7, 5), "X": (5, 5, 2, 5, 5),
    "Y": (5, 5, 2, 2, 2), "Z": (7, 1, 2, 4, 7),
}
_ADVANCE = 8  # pixels a glyph takes along its line, drawn at twice its size
_COLOURS = ((31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189), (140, 86, 75))
X_LABEL = "pages fetched"
Y_LABEL = "harvest rate (relevant / fetched)"


def plot_png(series: Sequence[Sequence[float]], width: int = 640, height: int = 400, *,
             title: str = "", x_label: str = X_LABEL, y_label: str = Y_LABEL) -> bytes:
    """A PNG line chart of `series` (y from 0 to 1, x the index): a frame, tick labels, the axes'
    labels (the y one upwards, along its axis) and a title above."""
    pixels = bytearray(b"\xff" * (width * height * 3))
    left, right, top, bottom = 60, width - 12, 34 if title else 12, height - 42

    def dot(x: int, y: int, colour: tuple[int, int, int]) -> None:
        if 0 <= x < width and 0 <= y < height:
            at = (y * width + x) * 3
            pixels[at:at + 3] = bytes(colour)

    def line(x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(steps + 1):
            dot(round(x0 + (x1 - x0) * i / steps), round(y0 + (y1 - y0) * i / steps), colour)

    def text(x: int, y: int, label: str, *, upwards: bool = False) -> None:
        """`label` from (x, y), its glyphs' top left; `upwards`: turned a quarter left, from the bottom."""
        for char in label.upper():
            for row, bits in enumerate(_GLYPHS.get(char, (0,) * 5)):
                for col in range(3):
                    if bits & (4 >> col):
                        for dx in range(2):
                            for dy in range(2):
                                across, down = col * 2 + dx, row * 2 + dy
                                if upwards:
                                    dot(x + down, y - across, (0, 0, 0))
                                else:
                                    dot(x + across, y + down, (0, 0, 0))
            if upwards:
                y -= _ADVANCE
            else:
                x += _ADVANCE

    grey, black = (220, 220, 220), (0, 0, 0)
    longest = max((len(s) for s in series), default=0)
    for tick in range(6):  # y: 0.0 .. 1.0
        y = bottom - round((bottom - top) * tick / 5)
        line(left, y, right, y, grey)
        text(left - 30, y - 5, f"{tick / 5:.1f}")
    for tick in range(5):  # x: pages fetched
        x = left + round((right - left) * tick / 4)
        line(x, top, x, bottom, grey)
        label = str(round(longest * tick / 4))
        text(min(x - len(label) * _ADVANCE // 2, width - len(label) * _ADVANCE), bottom + 6, label)
    line(left, top, left, bottom, black)
    line(left, bottom, right, bottom, black)
    text((left + right - len(x_label) * _ADVANCE) // 2, bottom + 24, x_label)
    text(6, (top + bottom + len(y_label) * _ADVANCE) // 2, y_label, upwards=True)
    if title:
        text(max(4, (width - len(title) * _ADVANCE) // 2), 10, title)
    for index, values in enumerate(series):
        colour = _COLOURS[index % len(_COLOURS)]
        previous = None
        for i, value in enumerate(values):
            x = left + round((right - left) * (i + 1) / max(longest, 1))
            y = bottom - round((bottom - top) * min(max(value, 0.0), 1.0))
            if previous is not None:
                line(*previous, x, y, colour)
            previous = (x, y)
    raw = b"".join(b"\x00" + bytes(pixels[row * width * 3:(row + 1) * width * 3]) for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) \
        + chunk(b"IEND", b"")
