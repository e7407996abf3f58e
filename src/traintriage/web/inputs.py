"""What a request asks to diagnose: (name, bytes) items for `pipeline.run_bytes`.

Per-rank files keep their names (the engine reads ranks from them); compressed uploads
stay compressed (the engine decompresses as it scans) but their decoded size is counted
first, so that a small archive cannot expand into hours of scanning.
"""

from __future__ import annotations

import io
from pathlib import PurePosixPath

from traintriage.errors import InputError
from traintriage.web.body import Part
from traintriage.web.problems import Problem

PASTE_NAME = "pasted.log"
LOG_FIELD = "log"
FILE_FIELD = "file"
_COMPRESSED = frozenset({".gz", ".bz2", ".xz", ".lzma", ".zst"})
_COUNT_BLOCK = 1 << 20


def clean_name(filename: str) -> str:
    """An upload's name as the user knows it: a relative path without '..' or empty parts
    (a browser may send a folder upload's path, e.g. 'attempt_0/3/stderr.log')."""
    parts = [p for p in filename.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)[-255:] or "upload.log"


def items_from_parts(parts: list[Part]) -> list[tuple[str, bytes]]:
    """Files of the `file` fields that hold bytes, then the pasted text of the `log` field."""
    items = [(clean_name(p.filename), bytes(p.data)) for p in parts
             if p.name == FILE_FIELD and p.filename is not None and p.data]
    items += [(PASTE_NAME, bytes(p.data)) for p in parts if p.name == LOG_FIELD and p.filename is None
              and p.data.strip()]
    return items


def require_log(items: list[tuple[str, bytes]], limit: int) -> list[tuple[str, bytes]]:
    """The items, or a 422 when there is nothing to read; 413 when they decode past `limit`."""
    items = [(name, data) for name, data in items if data]
    if not items:
        raise Problem(422, "no input: paste a log or choose log files")
    decoded = 0
    for name, data in items:
        decoded += decoded_size(name, data, limit - decoded + 1)
        if decoded > limit:
            raise Problem(413, f"logs larger than {limit >> 20} MB once decompressed; "
                               "run 'traintriage diagnose' on your machine for bigger logs")
    return items


def decoded_size(name: str, data: bytes, cap: int) -> int:
    """Bytes `data` holds once decompressed (by its name's suffix), counted up to `cap`."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in _COMPRESSED:
        return len(data)
    from traintriage.ingest.decompress import DecompressedReader

    total = 0
    block = bytearray(_COUNT_BLOCK)
    reader = DecompressedReader(io.BytesIO(data), suffix)
    try:
        while total < cap:
            count = reader.readinto(block)
            if not count:
                break
            total += count
    except EOFError:
        pass  # a cut archive: the engine reads what decodes and warns
    except Exception as exc:  # zlib.error, lzma.LZMAError, zstd's own error
        raise InputError(f"{name}: cannot decompress: {exc}") from exc
    return total
