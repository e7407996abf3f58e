"""Mask a byte stream of any size with bounded memory: read big blocks, cut at newlines.

Memory holds one block plus at most one unfinished line. A line longer than ``MAX_LINE``
is cut (at the last blank or separator near the limit, so a token is rarely split), which
keeps an endless line from exhausting memory.
"""

from __future__ import annotations

from typing import BinaryIO

from traintriage.ingest.chunks import iter_windows
from traintriage.ingest.mask.masker import Masker

CHUNK_SIZE = 8 << 20
MAX_LINE = 16 << 20
_CUT_WINDOW = 64 << 10
_SEPARATORS = (b" ", b"\t", b",", b";", b"\r")


def mask_stream(src: BinaryIO, dst: BinaryIO, chunk_size: int = CHUNK_SIZE) -> None:
    """Copy ``src`` to ``dst`` with every secret replaced; same lines, same line count.
    Read errors are raised (the caller names the input)."""
    masker = Masker()
    windows = iter_windows(src, "", None, chunk_size, max_line=max(MAX_LINE, chunk_size), cut_long_line=_soft_cut)
    for buffer, limit in windows:
        dst.write(masker.mask_chunk(bytes(memoryview(buffer)[:limit])))


def _soft_cut(data: bytearray, size: int) -> int:
    """Where to cut an over-long line: just after the last separator near its end."""
    floor = max(0, size - _CUT_WINDOW)
    best = max(data.rfind(separator, floor, size) for separator in _SEPARATORS)
    return best + 1 if best >= 0 else size
