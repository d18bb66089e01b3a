"""SimHashes of pages read back from a crawl's WARC files, for pages whose row holds none."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

from harvestman.batch.simhash import html_simhash
from harvestman.model.errors import StorageError

_HTML_TYPES = ("text/html", "application/xhtml+xml")


def warc_files(folder: Path) -> list[Path]:
    """The finished WARC files of a crawl: DIR/warc/*.warc.gz and DIR/segments/*/warc/*.warc.gz."""
    folder = Path(folder)
    return sorted([*folder.glob("warc/*.warc.gz"), *folder.glob("segments/*/warc/*.warc.gz")])


def _responses(path: Path, wanted: Collection[str]) -> Iterator[tuple[str, str, bytes]]:
    """(url, WARC-Date, body) of the HTML 200 responses of `wanted` URLs in one WARC file."""
    from warcio.archiveiterator import ArchiveIterator  # imported here: only this job reads WARC files

    with path.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type != "response":
                continue
            url = record.rec_headers.get_header("WARC-Target-URI") or ""
            if url not in wanted or record.http_headers is None:
                continue
            if record.http_headers.get_statuscode() != "200":
                continue
            ctype = (record.http_headers.get_header("Content-Type") or "").split(";", 1)[0].strip().lower()
            if ctype not in _HTML_TYPES:
                continue
            date = record.rec_headers.get_header("WARC-Date") or ""
            yield url, date, record.content_stream().read()


def simhashes_from_warc(folder: Path, wanted: Collection[str]) -> dict[str, int]:
    """The SimHash of each `wanted` URL's visible text, from its last HTML response (by WARC-Date,
    then by file order) in the crawl's WARC files; URLs without one are left out."""
    return simhashes_in(warc_files(folder), wanted)


def simhashes_in(files: Collection[Path], wanted: Collection[str]) -> dict[str, int]:
    """The SimHash of each `wanted` URL's last HTML response in the WARC `files` (as above)."""
    if not wanted:
        return {}
    last: dict[str, tuple[str, int]] = {}
    for path in files:
        try:
            for url, date, body in _responses(path, wanted):
                seen = last.get(url)
                if seen is None or date >= seen[0]:
                    last[url] = (date, html_simhash(body))
        except OSError as exc:
            raise StorageError(f"cannot read WARC file {path}: {exc}") from None
        except Exception as exc:  # warcio raises plain exceptions on a damaged file
            raise StorageError(f"damaged WARC file {path}: {exc}") from None
    return {url: value for url, (_, value) in last.items()}
