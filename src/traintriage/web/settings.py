"""What an operator may set for the web app, read once from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

MB = 1 << 20


def _megabytes(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) * MB if value.isdigit() and int(value) > 0 else default * MB


@dataclass(frozen=True)
class WebSettings:
    """Limits and storage. A request body past `max_upload_bytes` is refused with 413 while it
    streams in; decompressed uploads may grow to `max_log_bytes` in all."""

    max_upload_bytes: int
    max_log_bytes: int
    database_url: str | None

    @classmethod
    def from_env(cls) -> WebSettings:
        upload = _megabytes("TRAINTRIAGE_MAX_UPLOAD_MB", 64)
        return cls(
            max_upload_bytes=upload,
            max_log_bytes=max(upload, _megabytes("TRAINTRIAGE_MAX_LOG_MB", 256)),
            database_url=os.environ.get("TRAINTRIAGE_DATABASE_URL") or None,
        )
