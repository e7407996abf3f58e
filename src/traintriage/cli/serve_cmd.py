"""`traintriage serve` and `traintriage site build`: the web app and the static encyclopedia.

Both need the `serve` extra; without it they stop with a one-line error naming the pip command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from traintriage.errors import UsageError

EXTRA_HINT = "the web app needs the serve extra: pip install 'traintriage[serve]'"


def _require_extra() -> None:
    try:
        import fastapi  # noqa: F401
        import jinja2  # noqa: F401
        import python_multipart  # noqa: F401
        import sqlalchemy  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"{EXTRA_HINT} ({exc.name} is missing)") from exc


def serve_command(host: str, port: int, workers: int) -> int:
    """Migrate the database once, then run the app on uvicorn (one app per worker process)."""
    _require_extra()
    import uvicorn

    from traintriage.web.settings import WebSettings
    from traintriage.web.storage import open_store

    _check_port(host, port)
    try:
        open_store(WebSettings.from_env().database_url).close()
    except Exception as exc:  # the driver's own error types: one line, not a traceback
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"cannot open the database (TRAINTRIAGE_DATABASE_URL): {reason}") from exc
    print(f"traintriage: serving on http://{host}:{port} (Ctrl-C stops)", file=sys.stderr)
    uvicorn.run("traintriage.web.app:create_app", factory=True, host=host, port=port, workers=workers,
                log_level="warning", server_header=False,
                forwarded_allow_ips=os.environ.get("TRAINTRIAGE_TRUSTED_PROXIES") or None)
    return 0


def _check_port(host: str, port: int) -> None:
    """Say a taken or impossible address in one line before migrating anything."""
    import socket

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def site_build_command(out: Path) -> int:
    _require_extra()
    from traintriage.web.site import build_site

    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    pages = build_site(out)
    print(f"traintriage: wrote {pages} pages to {out}/ (open index.html through any web server)", file=sys.stderr)
    return 0
