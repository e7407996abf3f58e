"""`traintriage lsp`: check the `lsp` extra, then serve one editor on stdin/stdout.

Without the extra it stops with a one-line error naming the pip command, like `serve`.
"""

from __future__ import annotations

from traintriage.errors import UsageError

EXTRA_HINT = "the language server needs the lsp extra: pip install 'traintriage[lsp]'"


def _require_extra() -> None:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"{EXTRA_HINT} ({exc.name} is missing)") from exc


def lsp_command() -> int:
    """Run until the editor sends `exit` or closes the pipe. stdout carries the protocol only."""
    _require_extra()
    from traintriage.lsp.server import create_server

    create_server().start_io()
    return 0
