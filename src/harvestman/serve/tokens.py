"""The server's access token: given, from the environment, or made once and kept in ROOT/token."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harvestman.model.errors import ConfigError

TOKEN_ENV = "HARVESTMAN_TOKEN"
TOKEN_FILE = "token"
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True, slots=True)
class Token:
    """The token and where it came from ('option', 'env', 'file', 'new')."""

    value: str
    source: str


def given_token(given: str | None, env: Mapping[str, str] | None = None) -> Token | None:
    """`--token`, else $HARVESTMAN_TOKEN (checked), else None: the token given explicitly."""
    environ = os.environ if env is None else env
    if given:
        return Token(_checked(given, "--token"), "option")
    if environ.get(TOKEN_ENV):
        return Token(_checked(environ[TOKEN_ENV], TOKEN_ENV), "env")
    return None


def load_token(root: Path, given: Token | None) -> Token:
    """`given`, else ROOT/token, else a new one written there (mode 0600)."""
    if given is not None:
        return given
    path = Path(root) / TOKEN_FILE
    if path.is_file():
        return Token(_checked(path.read_text(encoding="utf-8").strip(), str(path)), "file")
    value = secrets.token_urlsafe(32)
    # O_EXCL with mode 0600: the token is never readable by others, not even for an instant.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(value + "\n")
    return Token(value, "new")


def _checked(value: str, where: str) -> str:
    value = value.strip()
    if len(value) < MIN_TOKEN_CHARS:
        raise ConfigError(f"the token from {where} is too short: use at least {MIN_TOKEN_CHARS} characters")
    return value


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, given: Token | None) -> None:
    """Refuse a non-loopback address unless the token was given explicitly (option or environment)."""
    if not is_loopback(host) and given is None:
        raise ConfigError(
            f"refusing to listen on {host} without a token given explicitly: pass --token "
            f"or set {TOKEN_ENV} (a loopback address such as 127.0.0.1 needs neither)"
        )
