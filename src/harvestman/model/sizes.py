"""Sizes as people write them: `10MiB`, `512k`, `1.5GB`, `1048576`; one reader for every size setting.

Units, case-insensitive: none or `B` is bytes; `k`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are
binary (1024, 1024², ...), as curl's and nginx's options read them; `kB`, `MB`, `GB`, `TB` are decimal
(1000, 1000², ...), as SI has them. A fraction is allowed where the result is whole bytes or more
(`1.5k` is 1536 bytes); it is rounded to the nearest byte.
"""

from __future__ import annotations

import re
from decimal import Decimal

from harvestman.model.errors import ConfigError

_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*", re.IGNORECASE)
UNITS: dict[str, int] = {"": 1, "b": 1}
for _power, _letter in enumerate("kmgt", start=1):
    UNITS[_letter] = UNITS[_letter + "ib"] = 1024**_power
    UNITS[_letter + "b"] = 1000**_power
SIZE_EXAMPLES = "10MiB, 512k, 1.5GB or a number of bytes"


def parse_size(text: str, what: str = "") -> int:
    """The bytes `text` says (see the module); a ConfigError (naming `what`) when it says none."""
    found = _SIZE.fullmatch(text)
    unit = UNITS.get(found.group(2).lower()) if found else None
    if found is None or unit is None:
        where = f"{what}: " if what else ""
        raise ConfigError(f"{where}{text!r} is not a size ({SIZE_EXAMPLES}; units k, M, G, T and KiB, MiB, "
                          "GiB, TiB are of 1024, kB, MB, GB, TB of 1000)")
    return round(Decimal(found.group(1)) * unit)  # exact: no float rounds a large size
