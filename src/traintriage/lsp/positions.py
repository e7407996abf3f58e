"""Where a log line is in the editor.

traintriage numbers a log's lines by their `\n` breaks (a progress bar's `\r` updates stay
in one line); an editor also ends a line at a lone `\r` (LSP: `\n`, `\r\n` and `\r`), so
every diagnostic after a progress bar would land too high. The mapping uses `str.split`,
`str.count` and `sum(map(len, ...))` over the text: linear, no Python loop per line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Place:
    """The editor lines (0-based) one log line covers, and the length of its last one in the
    client's position units (UTF-16 code units unless negotiated otherwise)."""

    first: int
    last: int
    end_units: int


def editor_places(text: str, log_lines: Iterable[int], units: Callable[[str], int]) -> dict[int, Place]:
    """The Place of each 1-based log line that the text has; lines beyond its end are left out."""
    wanted = sorted({line for line in log_lines if line >= 1})
    if not wanted:
        return {}
    parts = text.split("\n", wanted[-1])  # the lines asked for, then the rest of the text in one piece
    has_cr = "\r" in text
    places: dict[int, Place] = {}
    index = offset = lone_before = 0  # log line index, its character offset, lone \r before it
    for line in wanted:
        if line > len(parts):
            break
        target = line - 1
        start = offset + sum(map(len, parts[index:target])) + (target - index)
        if has_cr:
            lone_before += text.count("\r", offset, start) - text.count("\r\n", offset, start)
        index, offset = target, start
        body = parts[target]
        if has_cr and body.endswith("\r") and target < len(parts) - 1:
            body = body[:-1]  # the \r of a \r\n ending
        inner = body.count("\r") if has_cr else 0
        first = target + lone_before
        places[line] = Place(first=first, last=first + inner, end_units=units(body.rpartition("\r")[2]))
    return places


def unit_counter(encoding: str | None) -> Callable[[str], int]:
    """Length of a text in the position units the client and server agreed on ("utf-8",
    "utf-16", the LSP default, or "utf-32"), counted by the codecs, not char by char."""
    if encoding == "utf-32":
        return len
    if encoding == "utf-8":
        return lambda text: len(text.encode("utf-8", "surrogatepass"))
    return lambda text: len(text.encode("utf-16-le", "surrogatepass")) // 2
