"""`harvestman serve`: everything checked before anything is made (the network ceiling, the address
against the token), the port bound, then the token settled and uvicorn run on that socket."""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError
from harvestman.serve.ceiling import NetCeiling
from harvestman.serve.tokens import check_bind, given_token, load_token


def serve(root: Path, host: str, port: int, token: str | None, db: str = "", *,
          net: Mapping[str, Any] | None = None) -> int:
    """Serve the crawls under `root` until interrupted; crawls go on running after the server ends.
    `net` (allow_net, only_net, resolve, proxy) is the ceiling of everything it fetches for clients."""
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("harvestman serve needs its extra: pip install 'harvestman[serve]'") from None
    root = Path(root)
    ceiling = NetCeiling.of(net or {})
    given = given_token(token)
    check_bind(host, given)  # a refused start makes nothing: no folder, no token file
    sock = listen(host, port)  # a port in use is refused before anything is made or said
    try:
        try:
            root.mkdir(parents=True, exist_ok=True)
            root.chmod(0o700)  # the token, and database URLs, are kept here
        except OSError as exc:
            raise ConfigError(f"cannot use --data {root}: {exc.strerror}") from None
        found = load_token(root, given)
        from harvestman.serve.app import create_app

        app = create_app(root, found.value, db, ceiling=ceiling)
    except BaseException:
        sock.close()
        raise
    if found.source == "new":
        print(f"harvestman: a new token, stored in {root / 'token'} (mode 0600): {found.value}",
              file=sys.stderr)
    elif found.source == "file":  # shown only when made: say where it is
        print(f"harvestman: the token is in {root / 'token'}", file=sys.stderr)
    print(f"harvestman: serving {root} at {_url(host, sock.getsockname()[1])}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            proxy_headers=True)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port`; a ConfigError (one line, exit status 2) if it cannot be."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: restarts at once
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OverflowError:  # a port past 65535
        sock.close()
        raise ConfigError(f"cannot listen at {_url(host, port)}: --port is 0 to 65535") from None
    except OSError as exc:
        sock.close()
        why = "another server listens there; choose another --port" if exc.errno == errno.EADDRINUSE else ""
        raise ConfigError(f"cannot listen at {_url(host, port)}: {why or exc.strerror or exc}") from None
    return sock


def _url(host: str, port: int) -> str:
    host = host.strip("[]")
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"
