"""Read a byte stream as large chunks that end on line boundaries.

Scanning big chunks (not lines) is what keeps Python off the hot path; the scanner reads
windows of one reused buffer (no copy per chunk), other callers get bytes copies. A line
longer than the hard limit is cut there, so an endless line cannot exhaust memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from traintriage.errors import TraintriageError

if TYPE_CHECKING:
    from traintriage.ingest.sources import ByteStream

CHUNK_SIZE = 4 << 20
MAX_LINE = 64 << 20


@dataclass
class ReadProblem:
    """A problem met while reading that did not stop the diagnosis (e.g. truncated archive)."""

    message: str


def iter_windows(
    stream: ByteStream,
    name: str,
    problems: list[ReadProblem] | None,
    chunk_size: int = CHUNK_SIZE,
    *,
    max_line: int | None = None,
    cut_long_line: Callable[[bytearray, int], int] | None = None,
) -> Iterator[tuple[bytearray, int]]:
    """Yield (buffer, limit): `buffer[:limit]` holds whole lines (the last window may lack a
    trailing newline). The buffer is one object, refilled in place for the next window, so
    nothing is allocated or copied per chunk; a caller copies whatever it keeps (slices do).

    An unfinished line moves to the buffer's front; a line longer than the buffer grows it,
    up to `max_line` (MAX_LINE), where the line is cut (where `cut_long_line(buffer, size)` says, or at
    the cap). A read error ends the input and is noted in `problems`; with None, it is raised.
    """
    max_line = MAX_LINE if max_line is None else max_line
    buffer = bytearray(chunk_size)
    filled = 0
    readinto = getattr(stream, "readinto", None)
    while True:
        if filled == len(buffer):  # one line fills the buffer: grow it, up to the line cap
            if filled >= max_line:
                cut = cut_long_line(buffer, filled) if cut_long_line else filled
                yield buffer, cut
                buffer[: filled - cut] = buffer[cut:filled]
                filled -= cut
            else:
                buffer.extend(bytes(min(len(buffer), max_line - len(buffer))))
        with memoryview(buffer) as view, view[filled:] as target:
            read = _read_into(stream, readinto, target, name, problems)
        if not read:
            if filled:
                yield buffer, filled
            return
        end = filled + read
        cut = buffer.rfind(b"\n", filled, end) + 1
        if cut == 0:
            filled = end
            continue
        yield buffer, cut
        buffer[: end - cut] = buffer[cut:end]
        filled = end - cut


def iter_chunks(
    stream: ByteStream, name: str, problems: list[ReadProblem], chunk_size: int = CHUNK_SIZE
) -> Iterator[bytes]:
    """Chunks of whole lines as bytes objects a caller may keep (a copy of each window)."""
    for buffer, limit in iter_windows(stream, name, problems, chunk_size):
        yield bytes(memoryview(buffer)[:limit])


def _read_into(
    stream: ByteStream, readinto: Callable[[memoryview], int | None] | None, target: memoryview,
    name: str, problems: list[ReadProblem] | None,
) -> int:
    """Fill `target` from the stream; 0 at the end or when the input ends early (noted)."""
    try:
        if readinto is not None:
            return readinto(target) or 0
        block = stream.read(len(target)) or b""
        target[: len(block)] = block
        return len(block)
    except TraintriageError:  # our own verdict on the input (a binary stream): not a cut
        raise
    except Exception as exc:  # EOFError, OSError, or a decompressor's own error type
        if problems is None:
            raise
        problems.append(ReadProblem(f"{name}: input ends early ({_describe(exc)}); diagnosed what could be read"))
    return 0


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
