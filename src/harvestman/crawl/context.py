"""A page's context: the typed slots a feature's step fills for a later step of the same feature.

A gate or a page rule that has something for a later step (a re-crawl's check for the rule that records
it, focus's link scores for the link rule that hands them out) adds a slot of its own frozen type; the
later step reads it by that type (`ctx.get(Checked)`: the record, or None when no step added one). So a
feature's data lives with the feature's steps, not in fields of the chain's shared records
(crawl/page_step.py's Ticket and Draft carry the context whole).

The context is immutable: adding a slot gives a new context. A page no step adds a slot to keeps the
shared empty one (`NO_SLOTS`), so the default crawl allocates nothing for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageContext:
    """One page's slots, each keyed by the exact type of its record."""

    slots: Mapping[type, object]

    def get(self, kind: type[T]) -> T | None:
        """The slot of type `kind`, or None when no step added one."""
        # Keyed by type(record) in `with_slots`: the record under `kind` is a `kind`.
        return cast("T | None", self.slots.get(kind))

    def with_slots(self, *records: object) -> PageContext:
        """This context with `records` added (each replacing any slot of its type)."""
        slots = dict(self.slots)
        for record in records:
            slots[type(record)] = record
        return PageContext(MappingProxyType(slots))


NO_SLOTS = PageContext(MappingProxyType({}))  # the context of a page no step adds a slot to
