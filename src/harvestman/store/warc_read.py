"""The read side of a crawl's WARC files (store/warc.py writes them): which files a crawl holds, and
the responses stored in them as records.

Every job that reads pages back (index, features, extract, replay, re-crawl, parse, renders, the
served page view) reads them here, so that which files count, in what order, and what a damaged or
half-written file does are decided once.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from harvestman.fetch.content import media_type
from harvestman.model.errors import StorageError
from harvestman.model.records import Headers
from harvestman.store.warc import OPEN_SUFFIX, complete_length

HTML_TYPES = ("text/html", "application/xhtml+xml")
MACHINES_DIR = "machines"  # DIR/machines/NAME/: the folders (`--out`) of a shared crawl's other machines
_ONE_MACHINE = ("warc/*.warc.gz", "segments/*/warc/*.warc.gz")
_PATTERNS = (*_ONE_MACHINE, *(f"{MACHINES_DIR}/*/{pattern}" for pattern in _ONE_MACHINE))


def crawl_warc_files(folder: Path, *, open_files: bool = True) -> list[Path]:
    """Every WARC file of a crawl: the continuous crawl's (DIR/warc/), the segments'
    (DIR/segments/*/warc/), and the same in each other machine's folder copied or written into
    DIR/machines/NAME/; sorted by path, so a folder's files come in the order written (their names
    start with a timestamp). Files still being written, or left open by a killed machine
    (`.warc.gz.open`), are in unless `open_files` is false: readers read them up to their last whole
    record."""
    folder = Path(folder)
    return sorted(p for pattern in _patterns(_PATTERNS, open_files) for p in folder.glob(pattern))


def warc_files_in(warc_dir: Path, *, open_files: bool = False) -> list[Path]:
    """The WARC files of one WARC folder (a segment's `warc/`, say), in the order written."""
    warc_dir = Path(warc_dir)
    return sorted(p for pattern in _patterns(("*.warc.gz",), open_files) for p in warc_dir.glob(pattern))


def _patterns(patterns: tuple[str, ...], open_files: bool) -> list[str]:
    return [*patterns, *(p + OPEN_SUFFIX for p in patterns)] if open_files else list(patterns)


def is_open(path: Path) -> bool:
    """Whether `path` is a WARC file still being written (or left so by a killed crawl)."""
    return path.name.endswith(OPEN_SUFFIX)


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """One response record of a crawl's WARC files, and where it is."""

    url: str  # WARC-Target-URI: the URL answered (after redirects)
    status: int
    headers: Headers  # the HTTP headers as stored
    content_type: str  # the Content-Type header ("" when none)
    date: str  # WARC-Date
    record_id: str  # WARC-Record-ID
    truncated: str  # WARC-Truncated ("" when whole)
    file: Path
    offset: int  # of the record's gzip member in `file`
    body: bytes | None  # None when read without bodies: `read_response(r.file, r.offset)` gets it
    requested_url: str = ""  # the URL the crawl asked for (the metadata record's requestedURL)

    @property
    def is_html(self) -> bool:
        """Whether the response was served as HTML."""
        return media_type(self.content_type) in HTML_TYPES


@dataclass(slots=True)
class ReadCounts:
    """What a read left out: records cut off at the end of files still being written."""

    torn_files: int = 0  # open files whose last bytes were not a whole record yet


class _Prefix(io.RawIOBase):
    """The first `length` bytes of a file, read from disk as asked for (a killed machine's open file
    may be a GiB: never held in memory whole)."""

    def __init__(self, raw: io.BufferedReader, length: int) -> None:
        super().__init__()
        self._raw, self._length = raw, length

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._raw.tell()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            offset, whence = self._length + offset, io.SEEK_SET
        return self._raw.seek(offset, whence)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        room = max(0, self._length - self._raw.tell())
        return self._raw.readinto(view[: min(len(view), room)]) or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


def whole_records(path: Path, counts: ReadCounts | None = None) -> BinaryIO:
    """`path` opened for reading; an open file only up to its last complete gzip member, since the
    writer may be half-way through one, or was killed in one (warcio reads a cut member as a short
    record, silently)."""
    stream = path.open("rb")
    if not is_open(path):
        return stream
    try:
        length = complete_length(path)
        if counts is not None and os.fstat(stream.fileno()).st_size > length:
            counts.torn_files += 1
    except BaseException:
        stream.close()
        raise
    return io.BufferedReader(_Prefix(stream, length))


def warc_records(path: Path, kinds: Collection[str], counts: ReadCounts | None = None,
                 ) -> Iterator[tuple[Any, bytes, int, int]]:
    """(warcio record, its content, offset, length) of each record of `kinds` (WARC-Type) in one WARC
    file. A file that cannot be read or is damaged raises StorageError; an open file is read up to
    its last whole record (a torn one is counted in `counts`)."""
    from warcio.archiveiterator import ArchiveIterator  # imported here: only jobs reading WARC need it

    try:
        with whole_records(path, counts) as stream:
            records = ArchiveIterator(stream)
            for record in records:
                if record.rec_type not in kinds:
                    continue
                # The content first: warcio's get_record_offset() reads the record to its end.
                content = record.content_stream().read()
                yield record, content, records.get_record_offset(), records.get_record_length()
    except FileNotFoundError:
        if not is_open(path):
            raise StorageError(f"cannot read WARC file {path}: it is gone") from None
        # Finished (renamed) since it was listed: the same records under the final name.
        yield from warc_records(path.with_name(path.name.removesuffix(OPEN_SUFFIX)), kinds, counts)
    except OSError as exc:
        raise StorageError(f"cannot read WARC file {path}: {exc}") from None
    except StorageError:
        raise
    except Exception as exc:  # warcio raises plain exceptions (ValueError, ArchiveLoadFailed...)
        raise StorageError(f"damaged WARC file {path}: {exc}") from None


def _response(record: Any, path: Path, offset: int, body: bytes | None) -> StoredResponse:
    head, http = record.rec_headers, record.http_headers
    code = http.get_statuscode() or ""
    return StoredResponse(
        url=head.get_header("WARC-Target-URI") or "",
        status=int(code) if code.isdigit() else 0,
        headers=tuple((str(k), str(v)) for k, v in http.headers),
        content_type=http.get_header("Content-Type") or "",
        date=head.get_header("WARC-Date") or "",
        record_id=head.get_header("WARC-Record-ID") or "",
        truncated=head.get_header("WARC-Truncated") or "",
        file=path, offset=offset, body=body)


def _requested(block: bytes) -> str:
    for line in block.decode("utf-8", "replace").split("\r\n"):
        if line.startswith("requestedURL: "):
            return line[len("requestedURL: "):]
    return ""


def file_responses(path: Path, *, html_only: bool = True, ok_only: bool = True,
                   urls: Collection[str] | None = None, bodies: bool = True,
                   counts: ReadCounts | None = None) -> Iterator[StoredResponse]:
    """The responses of one WARC file, in file order: `html_only` served as HTML, `ok_only` status
    200, `urls` (WARC-Target-URI) among these; each with the URL requested (its metadata record's)."""
    pending: StoredResponse | None = None  # the writer puts a fetch's metadata record after its response
    for record, content, offset, _ in warc_records(path, ("response", "metadata"), counts):
        if record.rec_type == "metadata":
            concurrent = record.rec_headers.get_header("WARC-Concurrent-To")
            if pending is not None and concurrent == pending.record_id:
                yield dataclasses.replace(pending, requested_url=_requested(content) or pending.url)
                pending = None
            continue
        if pending is not None:
            yield dataclasses.replace(pending, requested_url=pending.url)
            pending = None
        if record.http_headers is None:
            continue
        found = _response(record, path, offset, content if bodies else None)
        if (ok_only and found.status != 200) or (html_only and not found.is_html) \
                or (urls is not None and found.url not in urls):
            continue
        pending = found
    if pending is not None:
        yield dataclasses.replace(pending, requested_url=pending.url)


def responses_in(files: Collection[Path], *, html_only: bool = True, ok_only: bool = True,
                 latest: bool = False, urls: Collection[str] | None = None, bodies: bool = True,
                 counts: ReadCounts | None = None) -> Iterator[StoredResponse]:
    """The responses of `files` that pass the filters (see file_responses), file by file; `latest`:
    only each URL's last one (by WARC-Date, then file order), found first and then read one at a
    time, so that a single body is in memory at once."""
    if not latest:
        for path in files:
            yield from file_responses(path, html_only=html_only, ok_only=ok_only, urls=urls,
                                      bodies=bodies, counts=counts)
        return
    last: dict[str, tuple[str, int, StoredResponse]] = {}
    for order, path in enumerate(files):
        for found in file_responses(path, html_only=html_only, ok_only=ok_only, urls=urls, bodies=False,
                                    counts=counts):
            seen = last.get(found.url)
            if seen is None or (found.date, order) >= seen[:2]:
                last[found.url] = (found.date, order, found)
    by_file: dict[Path, list[StoredResponse]] = defaultdict(list)
    for _, _, found in last.values():
        by_file[found.file].append(found)
    for path in files:
        for found in sorted(by_file.get(path, ()), key=lambda r: r.offset):
            body = read_response(found.file, found.offset).body if bodies else None
            yield dataclasses.replace(found, body=body)


def stored_responses(folder: Path, *, html_only: bool = True, ok_only: bool = True, latest: bool = False,
                     urls: Collection[str] | None = None, open_files: bool = True, bodies: bool = True,
                     counts: ReadCounts | None = None) -> Iterator[StoredResponse]:
    """The responses stored by the crawl in `folder` (every file of crawl_warc_files), filtered as
    responses_in says."""
    yield from responses_in(crawl_warc_files(folder, open_files=open_files), html_only=html_only,
                            ok_only=ok_only, latest=latest, urls=urls, bodies=bodies, counts=counts)


def read_response(path: Path, offset: int) -> StoredResponse:
    """The response record at `offset` of a WARC file, body included; StorageError when there is none."""
    from warcio.archiveiterator import ArchiveIterator

    for name in (path, path.with_name(path.name.removesuffix(OPEN_SUFFIX))):
        try:
            with name.open("rb") as stream:
                stream.seek(offset)
                record = next(iter(ArchiveIterator(stream)))
                if record.rec_type != "response" or record.http_headers is None:
                    raise StorageError(f"no response record at {path}:{offset}")
                return _response(record, path, offset, record.content_stream().read())
        except FileNotFoundError:
            continue  # an open file finished since: the same offset under its final name
        except OSError as exc:
            raise StorageError(f"cannot read WARC file {path}: {exc}") from None
        except StorageError:
            raise
        except Exception as exc:  # warcio's plain exceptions, StopIteration at the end of the file
            raise StorageError(f"no readable record at {path}:{offset}: {exc}") from None
    raise StorageError(f"cannot read WARC file {path}: it is gone")
