"""Decompress a log stream incrementally, keeping every byte that decodes.

The standard library's file readers (gzip.open, ...) drop the last decoded block when an
archive is cut, and zstandard's stream reader ends a cut frame silently. Here each format's
incremental decompressor is fed blocks of input: everything decoded is handed out first,
and only then does the read report, as an EOFError, how much of the archive was read.
Concatenated members and frames (pigz, `cat a.gz b.gz`) are read one after the other.
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from collections.abc import Callable
from typing import BinaryIO

INPUT_BLOCK = 256 << 10
OUTPUT_BLOCK = 1 << 20


def _gzip() -> object:
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)


def _zstd() -> object:
    import zstandard  # imported only when a .zst file is met

    return zstandard.ZstdDecompressor().decompressobj()


_FACTORIES: dict[str, Callable[[], object]] = {
    ".gz": _gzip, ".bz2": bz2.BZ2Decompressor, ".xz": lzma.LZMADecompressor, ".lzma": lzma.LZMADecompressor,
    ".zst": _zstd,
}


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB" if count >= 100_000 else f"{count:,} bytes"


class DecompressedReader(io.RawIOBase):
    """The decoded bytes of a compressed stream, read with `readinto`; memory stays bounded
    (one input block, at most one output block pending) except for zstd, whose decoder
    has no output cap and gets small input blocks instead."""

    def __init__(self, raw: BinaryIO | io.BufferedIOBase | io.RawIOBase, suffix: str) -> None:
        super().__init__()
        self._raw = raw
        self._suffix = suffix
        self._factory = _FACTORIES[suffix]
        self._decoder: object | None = None
        self._pending = b""  # decoded, not yet handed out
        self._input = b""  # compressed, not yet given to the decoder
        self._read = 0  # compressed bytes read from `raw`
        self._decoded = 0
        self._finished = False
        self._block = INPUT_BLOCK // 4 if suffix == ".zst" else INPUT_BLOCK

    def readable(self) -> bool:
        return True

    def readinto(self, target: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._pending and not self._finished:
            self._decode_some()
        count = min(len(target), len(self._pending))
        target[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def _decode_some(self) -> None:
        decoder = self._decoder
        if decoder is not None and getattr(decoder, "eof", False):
            self._input = getattr(decoder, "unused_data", b"") + self._input
            decoder = self._decoder = None
        if not self._input and not self._more_output(decoder):
            block = self._raw.read(self._block) or b""
            self._read += len(block)
            if not block:
                self._end(decoder)
                return
            self._input = block
        if decoder is None:
            if self._suffix == ".gz":
                self._input = self._input.lstrip(b"\x00")  # gzip files may be padded with zeros
                if not self._input:
                    return
            decoder = self._decoder = self._factory()
        data, self._input = self._input, b""
        self._pending = self._decode(decoder, data)
        self._decoded += len(self._pending)

    def _more_output(self, decoder: object | None) -> bool:
        """The decoder holds input it has not turned into output yet (output was capped)."""
        if decoder is None:
            return False
        if isinstance(decoder, (bz2.BZ2Decompressor, lzma.LZMADecompressor)):
            return not decoder.needs_input and not decoder.eof
        return bool(getattr(decoder, "unconsumed_tail", b"")) and self._suffix == ".gz"

    def _decode(self, decoder: object, data: bytes) -> bytes:
        if isinstance(decoder, (bz2.BZ2Decompressor, lzma.LZMADecompressor)):
            return decoder.decompress(data, OUTPUT_BLOCK)
        if self._suffix == ".gz":
            zdecoder: zlib._Decompress = decoder  # type: ignore[assignment]
            out = zdecoder.decompress(zdecoder.unconsumed_tail + data, OUTPUT_BLOCK)
            return out
        return decoder.decompress(data)  # type: ignore[attr-defined, no-any-return]

    def _end(self, decoder: object | None) -> None:
        self._finished = True
        if decoder is not None and not getattr(decoder, "eof", False):
            raise EOFError(
                f"compressed data cut short: {_megabytes(self._read)} read, {_megabytes(self._decoded)} decoded"
            )

    def close(self) -> None:
        self._raw.close()
        super().close()
