"""Read a byte stream as large chunks that end on line boundaries.

Scanning big chunks (not lines) is what keeps Python off the hot path. A line longer
than the hard limit is cut there, so an endless line cannot exhaust memory.
"""

from __future__ import annotations

import lzma
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traintriage.ingest.sources import ByteStream

CHUNK_SIZE = 8 << 20
MAX_LINE = 64 << 20


@dataclass
class ReadProblem:
    """A problem met while reading that did not stop the diagnosis (e.g. truncated archive)."""

    message: str


def iter_chunks(
    stream: ByteStream, name: str, problems: list[ReadProblem], chunk_size: int = CHUNK_SIZE
) -> Iterator[bytes]:
    """Yield chunks of whole lines; the last may lack a trailing newline."""
    carry = b""
    while True:
        try:
            block = stream.read(chunk_size) or b""
        except (EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
            problems.append(ReadProblem(f"{name}: input ends early ({_describe(exc)}); diagnosed what could be read"))
            block = b""
        except Exception as exc:  # third-party decompressors raise their own types
            problems.append(ReadProblem(f"{name}: input ends early ({_describe(exc)}); diagnosed what could be read"))
            block = b""
        if not block:
            if carry:
                yield carry
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            carry += block
            if len(carry) >= MAX_LINE:
                yield carry
                carry = b""
            continue
        yield carry + block[:cut] if carry else block[:cut]
        carry = block[cut:]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
