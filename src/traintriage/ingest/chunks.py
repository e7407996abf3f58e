"""Read a byte stream as large chunks that end on line boundaries.

Scanning big chunks (not lines) is what keeps Python off the hot path. A line longer
than the hard limit is cut there, so an endless line cannot exhaust memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traintriage.ingest.sources import ByteStream

CHUNK_SIZE = 4 << 20
MAX_LINE = 64 << 20


@dataclass
class ReadProblem:
    """A problem met while reading that did not stop the diagnosis (e.g. truncated archive)."""

    message: str


def iter_chunks(
    stream: ByteStream, name: str, problems: list[ReadProblem], chunk_size: int = CHUNK_SIZE
) -> Iterator[bytes]:
    """Yield chunks of whole lines; the last may lack a trailing newline.

    Reads go into one reused buffer (a fresh multi-megabyte object per read costs more in page faults
    than the copy out of the buffer); an unfinished line moves to the buffer's front.
    """
    buffer = bytearray(chunk_size)
    view = memoryview(buffer)
    filled = 0
    readinto = getattr(stream, "readinto", None)
    while True:
        if filled == len(buffer):  # one line fills the buffer: grow it, up to the line cap
            if filled >= MAX_LINE:
                yield bytes(view[:filled])
                filled = 0
            else:
                view.release()
                buffer.extend(bytes(min(len(buffer), MAX_LINE - len(buffer))))
                view = memoryview(buffer)
        read = _read_into(stream, readinto, view[filled:], name, problems)
        if not read:
            if filled:
                yield bytes(view[:filled])
            return
        end = filled + read
        cut = buffer.rfind(b"\n", filled, end) + 1
        if cut == 0:
            filled = end
            continue
        yield bytes(view[:cut])
        view[: end - cut] = view[cut:end]
        filled = end - cut


def _read_into(
    stream: ByteStream, readinto: Callable[[memoryview], int | None] | None, target: memoryview,
    name: str, problems: list[ReadProblem],
) -> int:
    """Fill `target` from the stream; 0 at the end or when the input ends early (noted)."""
    try:
        if readinto is not None:
            return readinto(target) or 0
        block = stream.read(len(target)) or b""
        target[: len(block)] = block
        return len(block)
    except Exception as exc:  # EOFError, OSError, or a decompressor's own error type
        problems.append(ReadProblem(f"{name}: input ends early ({_describe(exc)}); diagnosed what could be read"))
    return 0


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
