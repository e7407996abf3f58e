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
from traintriage.match.scan import LineHit, SourceScan, ends_near_a_frame
from traintriage.parse.prefix import parse_prefix
from traintriage.parse.traceback import TRACEBACK_HEADER, is_frame_line

_CARETS = re.compile(r"^[\s~^]{1,4000}$")
_EXCEPTION_LINE = re.compile(r"\s{0,40}(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Za-z_]\w{0,100}(?::|\s{0,40}$)")
"""`AttributeError: ...`, `KeyboardInterrupt`: the line that closes a traceback (a frame's source line is a
statement, `return next(self.gen)`, never a bare dotted name)."""


def last_frame_lines(scans: list[SourceScan], names: list[str]) -> list[Observation]:
    """The last frame's `File ...` line and source line of each source whose log ends inside a
    traceback (see `_cut_at`). Their line numbers count back from the log's end over the kept
    tail, which drops blank lines: only the words are used. A rank prefix on them is kept."""
    found: list[Observation] = []
    for scan in scans:
        if not ends_near_a_frame(scan.tail):
            continue
        prefixes = [parse_prefix(text) for text in scan.tail]
        messages = [prefix.message for prefix in prefixes]
        frame_at = _cut_at(messages, [_indented(text, m) for text, m in zip(scan.tail, messages, strict=True)])
        if frame_at is None:
            continue
        first = scan.lines - (len(_trimmed(messages)) - 1 - frame_at)
        for offset, message in enumerate(_trimmed(messages)[frame_at:]):
            hit = LineHit(source=scan.source, line=first + offset, text=message, patterns=[])
            found.append(Observation(hit=hit, source_name=names[scan.source], rank=prefixes[frame_at + offset].rank,
                                     host=None, time=None, message=message.strip(), order=-1))
    return found


def ends_in_traceback(scans: list[SourceScan], not_failures: set[int]) -> bool:
    """Some source's output stops inside a traceback: the process was reporting an exception
    when its log ended, which no run that went on to finish leaves behind. `not_failures`: the
    sources whose last lines report an exception the run survived (see salient.reports_at_the_end)."""
    for scan in scans:
        if scan.source in not_failures or not ends_near_a_frame(scan.tail):
            continue
        messages = [parse_prefix(text).message for text in scan.tail]
        if _cut_at(messages, [_indented(text, m) for text, m in zip(scan.tail, messages, strict=True)]) is not None:
            return True
    return False


def _indented(raw: str, message: str) -> bool:
    """Whether the message sat three or more blanks in, past any prefix (a traceback's source
    line; the prefixes' own separator is one blank): prefix parsing strips the indentation."""
    at = raw.rfind(message) if message else -1
    before = raw[:at] if at > 0 else ""
    return len(before) - len(before.rstrip()) >= 3


def _trimmed(messages: list[str]) -> list[str]:
    """Without the blank and caret-only lines at the end."""
    end = len(messages)
    while end and (not messages[end - 1].strip() or _CARETS.match(messages[end - 1])):
        end -= 1
    return messages[:end]


def _cut_at(messages: list[str], indented: list[bool]) -> int | None:
    """Where the last frame starts, when the messages end on it (its `File` line, then at most
    its source line) and a traceback is surely printing: its header before, or frames from the
    paste's first line on (a paste that starts below the header)."""
    messages = _trimmed(messages)
    if messages and is_frame_line(messages[-1]):
        frame_at = len(messages) - 1
    elif len(messages) > 1 and is_frame_line(messages[-2]) and not _EXCEPTION_LINE.match(messages[-1]):
        frame_at = len(messages) - 2
    else:
        return None  # something follows the last frame and its source line: the exception, or more
    if any(TRACEBACK_HEADER in m for m in messages[:frame_at]):
        return frame_at
    start = _frames_start(messages, frame_at)
    # Without its header, the frames must be all the paste shows (or all of its last lines): frames
    # under a line of their own (a logged graph break's `User code traceback:`, a stack dump's title)
    # are a stack some tool printed while the run went on.
    # a paste may start on the source line (and carets) of a frame it cut
    if start > 2 or not all(indented[i] or _CARETS.match(messages[i]) for i in range(start)):
        return None
    return frame_at if frame_at > start else None


def _frames_start(messages: list[str], frame_at: int) -> int:
    """The first line of the run of frames (each with its source line and carets) that ends at `frame_at`."""
    start = frame_at
    while start > 0:
        back = next((step for step in (1, 2, 3) if start - step >= 0 and is_frame_line(messages[start - step])), None)
        if back is None or any(is_frame_line(m) or TRACEBACK_HEADER in m for m in messages[start - back + 1:start]):
            break
        if back == 3 and not _CARETS.match(messages[start - 1]):
            break
        start -= back
    return start
