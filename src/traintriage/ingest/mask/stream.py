"""Mask a byte stream of any size with bounded memory: read big blocks, cut at newlines.

Memory holds one block plus at most one unfinished line. A line longer than ``MAX_LINE``
is cut (at the last blank or separator near the limit, so a token is rarely split), which
keeps an endless line from exhausting memory.
"""

from __future__ import annotations

from typing import BinaryIO

from traintriage.ingest.mask.masker import Masker

CHUNK_SIZE = 8 << 20
MAX_LINE = 16 << 20
_CUT_WINDOW = 64 << 10
_SEPARATORS = (b" ", b"\t", b",", b";", b"\r")


def mask_stream(src: BinaryIO, dst: BinaryIO, chunk_size: int = CHUNK_SIZE) -> None:
    """Copy ``src`` to ``dst`` with every secret replaced; same lines, same line count."""
    masker = Masker()
    max_line = max(MAX_LINE, chunk_size)
    carry = b""
    while True:
        block = src.read(chunk_size)
        if not block:
            break
        data = carry + block if carry else block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) < max_line:
                carry = data
                continue
            cut = _soft_cut(data)
        dst.write(masker.mask_chunk(data[:cut]))
        carry = data[cut:]
    if carry:
        dst.write(masker.mask_chunk(carry))


def _soft_cut(data: bytes) -> int:
    """Where to cut an over-long line: just after the last separator near its end."""
    floor = max(0, len(data) - _CUT_WINDOW)
    best = max(data.rfind(separator, floor) for separator in _SEPARATORS)
    return best + 1 if best >= 0 else len(data)
