"""Structured logs: one JSON object per line on stderr, for a team server's log pipeline.

`TRAINTRIAGE_LOG_FORMAT=text` keeps plain lines. Fields: time, level, logger, message,
plus whatever the call passed in `extra=` (event, route, status, ms, caller kind...).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import datetime, timezone

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD and not k.startswith("_")})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging() -> None:
    """Send the `traintriage` loggers to stderr as JSON (once per process)."""
    logger = logging.getLogger("traintriage")
    if any(getattr(h, "_traintriage", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler._traintriage = True  # type: ignore[attr-defined]
    if os.environ.get("TRAINTRIAGE_LOG_FORMAT", "json") != "text":
        handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel(os.environ.get("TRAINTRIAGE_LOG_LEVEL", "INFO").upper())
    logger.propagate = False
