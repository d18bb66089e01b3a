"""events.jsonl lines written field by field are the JSON of Event.to_json()."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harvestman.model.events import Event, EventKind
from harvestman.store.journal import event_line

_text = st.text(max_size=40)

events = st.builds(
    Event,
    kind=st.sampled_from(EventKind),
    time=st.floats(min_value=0, max_value=4e9, allow_nan=False),
    url=_text,
    host=_text,
    status=st.integers(min_value=0, max_value=999),
    bytes=st.integers(min_value=0, max_value=1 << 40),
    error_class=_text,
    message=_text,
    extra=st.lists(st.tuples(st.sampled_from(["url", "note", "depth"]), _text), max_size=2).map(tuple),
)


@given(events)
def test_line_is_the_json_of_to_json(event: Event) -> None:
    line = event_line(event)
    assert line == json.dumps(event.to_json(), ensure_ascii=False) + "\n"
    assert line.count("\n") == 1 and json.loads(line) == event.to_json()
