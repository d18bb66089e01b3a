"""`harvestman serve`: the token settled, the address checked, then uvicorn runs the application."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harvestman.model.errors import ConfigError
from harvestman.serve.ceiling import NetCeiling
from harvestman.serve.tokens import check_bind, load_token


def serve(root: Path, host: str, port: int, token: str | None, db: str = "", *,
          net: Mapping[str, Any] | None = None) -> int:
    """Serve the crawls under `root` until interrupted; crawls go on running after the server ends.
    `net` (allow_net, only_net, resolve, proxy) is the ceiling of everything it fetches for clients."""
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("harvestman serve needs its extra: pip install 'harvestman[serve]'") from None
    root = Path(root)
    ceiling = NetCeiling.of(net or {})  # checked before serving
    try:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o700)  # the token, and database URLs, are kept here
    except OSError as exc:
        raise ConfigError(f"cannot use --data {root}: {exc.strerror}") from None
    found = load_token(root, token)
    check_bind(host, found)
    from harvestman.serve.app import create_app

    app = create_app(root, found.value, db, ceiling=ceiling)
    if found.source == "new":
        print(
            f"harvestman: a new token, stored in {root / 'token'} (mode 0600): {found.value}", file=sys.stderr
        )
    shown = f"[{host}]" if ":" in host else host
    print(f"harvestman: serving {root} at http://{shown}:{port}/", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, proxy_headers=True)
    return 0
