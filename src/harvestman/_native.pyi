"""The optional native core built by native/build.py (absent unless built); see store/warc.py."""

from collections.abc import Callable, Sequence

from harvestman.model.records import FetchResult, Headers

ABI: int

def configure(compress: Callable[[bytes, int, int], bytes], reasons: dict[int, str], /) -> None: ...
def warc_fetch(result: FetchResult, request_headers: Headers, outlinks: Sequence[str], payload_digest: str,
               level: int, ids: tuple[str, str, str] | None, /) -> bytes | None: ...
def sha1_base32(data: bytes, /) -> str: ...
