"""SqliteStore.put_records: whole rows copied into another store (a segment's fetch list)."""

from __future__ import annotations

from pathlib import Path

from harvestman.model.records import UrlState
from harvestman.store.sqlite_store import SqliteStore
from tests.support.stores import T0, done, host_of, nu


def test_put_records_copies_whole_rows_and_leases_them_with_their_validators(tmp_path: Path) -> None:
    main = SqliteStore(tmp_path / "main.db", host_of=host_of)
    main.add([nu("http://a.test/1", depth=2, score=3.0), nu("http://a.test/2")])
    main.lease(10, T0)
    main.complete([done("http://a.test/1", http_status=200, etag='"e1"', last_modified="Mon",
                        signature="sig", fetch_interval=50.0, next_fetch_time=T0 + 50,
                        simhash=(1 << 64) - 2, wire_bytes=300, saved_bytes=8700, body_wire_bytes=0,
                        partial="head", change="unchanged", checked_by="conditional", topic="t",
                        relevance=0.5)], T0)
    records = [r for r in main.records()]
    seg = SqliteStore(tmp_path / "seg.db", host_of=host_of)
    assert seg.put_records(records) == 2
    assert seg.put_records(records) == 0  # known rows stay as they are
    copied = seg.get("http://a.test/1")
    assert copied == main.get("http://a.test/1")
    assert seg.pending() == 2
    leased = {x.url: x for x in seg.lease(10, T0 + 50)}
    one = leased["http://a.test/1"]
    assert (one.etag, one.last_modified, one.signature, one.fetch_interval, one.depth) == (
        '"e1"', "Mon", "sig", 50.0, 2)
    assert "http://a.test/2" in leased
    # Rows known but not queued: never leased.
    other = SqliteStore(tmp_path / "other.db", host_of=host_of)
    other.put_records(records, queued=False)
    assert other.pending() == 0 and other.lease(10, T0 + 100) == []
    assert other.counts()[UrlState.FETCHED] == 1
    for s in (main, seg, other):
        s.close()
