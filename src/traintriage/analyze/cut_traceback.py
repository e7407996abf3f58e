"""A paste that ends inside a traceback, before its exception line: what its last frame was doing.

Users cut their pastes short, and some tools cut a worker's output: the log ends on a frame of a
traceback, and no line says what failed. When no class explains such a failure, the last frame's
source line (`tokenizer.apply_chat_template(...)`, `self.scaler.unscale_(opt)`) is the best hint
left of where it failed; the second opinion ranks KB entries by its words, and what it finds is
offered as candidates only, never as the root cause.
"""

from __future__ import annotations

import re

from traintriage.analyze.observations import Observation
from traintriage.match.scan import LineHit, SourceScan
from traintriage.parse.prefix import parse_prefix
from traintriage.parse.traceback import TRACEBACK_HEADER, is_frame_line

_CARETS = re.compile(r"^[\s~^]{1,4000}$")
_IGNORED = "Exception ignored in"
_EXCEPTION_LINE = re.compile(r"\s{0,40}(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Za-z_]\w{0,100}(?::|\s{0,40}$)")
"""`AttributeError: ...`, `KeyboardInterrupt`: the line that closes a traceback (a frame's source line is a
statement, `return next(self.gen)`, never a bare dotted name)."""


def last_frame_lines(scans: list[SourceScan], names: list[str]) -> list[Observation]:
    """The last frame's `File ...` line and source line of each source whose log ends inside a
    traceback (see `_cut_at`). Their line numbers count back from the log's end over the kept
    tail, which drops blank lines: only the words are used. A rank prefix on them is kept."""
    found: list[Observation] = []
    for scan in scans:
        if not _may_end_on_a_frame(scan.tail):
            continue
        prefixes = [parse_prefix(text) for text in scan.tail]
        messages = [prefix.message for prefix in prefixes]
        frame_at = _cut_at(messages)
        if frame_at is None:
            continue
        first = scan.lines - (len(_trimmed(messages)) - 1 - frame_at)
        for offset, message in enumerate(_trimmed(messages)[frame_at:]):
            hit = LineHit(source=scan.source, line=first + offset, text=message, patterns=[])
            found.append(Observation(hit=hit, source_name=names[scan.source], rank=prefixes[frame_at + offset].rank,
                                     host=None, time=None, message=message.strip(), order=-1))
    return found


def ends_in_traceback(scans: list[SourceScan]) -> bool:
    """Some source's output stops inside a traceback: the process was reporting an exception
    when its log ended, which no run that went on to finish leaves behind."""
    return any(_may_end_on_a_frame(scan.tail) and _cut_at([parse_prefix(text).message for text in scan.tail]) is not None
               for scan in scans)


def _may_end_on_a_frame(tail: list[str]) -> bool:
    """A frame's `File "` in one of the last three lines that are not blank (its source line and the
    carets under it, a rank prefix before them, may follow): the cheap test that spares a fleet of
    20,000 logs the parsing of every tail's prefixes."""
    kept = 0
    for text in reversed(tail):
        if not text.strip():
            continue
        if 'File "' in text:
            return True
        kept += 1
        if kept == 3:
            return False
    return False


def _trimmed(messages: list[str]) -> list[str]:
    """Without the blank and caret-only lines at the end."""
    end = len(messages)
    while end and (not messages[end - 1].strip() or _CARETS.match(messages[end - 1])):
        end -= 1
    return messages[:end]


def _cut_at(messages: list[str]) -> int | None:
    """Where the last frame starts, when the messages end on it (its `File` line, then at most
    its source line) and a traceback is surely printing: its header before, or a frame
    before that one too (a paste that starts below the header). Not the traceback of an
    `Exception ignored in: ...` report: Python prints those and goes on (at exit, often)."""
    messages = _trimmed(messages)
    if messages and is_frame_line(messages[-1]):
        frame_at = len(messages) - 1
    elif len(messages) > 1 and is_frame_line(messages[-2]) and not _EXCEPTION_LINE.match(messages[-1]):
        frame_at = len(messages) - 2
    else:
        return None  # something follows the last frame and its source line: the exception, or more
    header_at = next((i for i in range(frame_at - 1, -1, -1) if TRACEBACK_HEADER in messages[i]), None)
    if header_at is not None:
        return None if header_at and _IGNORED in messages[header_at - 1] else frame_at
    return frame_at if any(is_frame_line(m) for m in messages[max(0, frame_at - 3):frame_at]) else None
