"""A crawl's settings as the API takes them (JSON, named as CrawlConfig's fields), checked before any
crawl starts; an invalid one is a SettingsError naming the field."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harvestman.launch.seeds import check_seeds
from harvestman.model.config import CrawlConfig, config_from_mapping, flat_settings, merge_settings
from harvestman.model.errors import ConfigError
from harvestman.model.settings import NOT_SETTABLE

MAX_SEEDS = 10_000
_NAMED = re.compile(r"'([a-z_]+)'")


class SettingsError(ConfigError):
    """An invalid setting (or seed list, or job option) in a request, and the field it concerns."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def check_settings(seeds: Any, settings: Any) -> tuple[list[str], dict[str, Any]]:
    """The seeds and the flat settings of a request, checked as a crawl would check them."""
    if not isinstance(settings, Mapping):
        raise SettingsError("settings must be an object of setting names and values", "settings")
    try:
        flat = flat_settings(settings)
    except ConfigError as exc:
        raise SettingsError(str(exc), _field_in(str(exc), list(map(str, settings)))) from None
    for name in flat:
        if name in NOT_SETTABLE:
            raise SettingsError(f"setting {name!r} cannot be set through the API", name)
        try:
            config_from_mapping({name: flat[name]})
        except ConfigError as exc:
            raise SettingsError(str(exc), name) from None
    try:
        cfg = config_from_mapping(flat)
    except ConfigError as exc:
        raise SettingsError(str(exc), _field_in(str(exc), list(flat))) from None
    return _checked_seeds(seeds, cfg), flat


def _checked_seeds(seeds: Any, cfg: CrawlConfig) -> list[str]:
    if not isinstance(seeds, list) or not all(isinstance(s, str) for s in seeds):
        raise SettingsError("seeds must be a list of URLs", "seeds")
    if not seeds or len(seeds) > MAX_SEEDS:
        raise SettingsError(f"name between 1 and {MAX_SEEDS} seed URLs", "seeds")
    # The command line's check, in its words; a request names its seeds on purpose, so any refused
    # one refuses the request (the command line skips it with a note and goes on with the others).
    found = check_seeds(seeds, max_length=cfg.max_url_length)
    if found.refused:
        raise SettingsError(found.refused[0], "seeds")
    return list(seeds)


def _field_in(message: str, names: list[str]) -> str:
    """The setting a ConfigError's message names: the first quoted name, else the only one given."""
    for match in _NAMED.finditer(message):
        return match.group(1)
    for name in names:
        if name in message:
            return name
    return names[0] if names else "settings"


def crawl_config(
    folder: Path, seeds: list[str], settings: Mapping[str, Any], *, db: str = "", resume: bool = False
) -> CrawlConfig:
    """The config a served crawl runs with: the request's settings, the folder the server chose, and
    events printed as JSON lines (the server's event stream)."""
    fixed = {"seeds": seeds, "out_dir": folder, "db": db, "resume": resume, "log_json": True, "quiet": True}
    cfg, _ = merge_settings({}, settings, fixed)
    return cfg
