"""The third-party conformance data in tests/data/conformance/ (source, revision, license: its README).

Read relative to this file, so a clone anywhere runs the same tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "conformance"
URLTESTDATA = DATA_DIR / "urltestdata.json"
ROBOTS_CASES = DATA_DIR / "robots_rfc9309_cases.json"


def url_cases() -> list[dict[str, Any]]:
    """The WHATWG URL parser cases of urltestdata.json (its comment strings left out)."""
    return [case for case in json.loads(URLTESTDATA.read_text(encoding="utf-8")) if isinstance(case, dict)]


def robots_data() -> dict[str, Any]:
    """robots_rfc9309_cases.json: Google's robots.txt matcher assertions as data."""
    data: dict[str, Any] = json.loads(ROBOTS_CASES.read_text(encoding="utf-8"))
    return data
