"""A paste that ends inside a traceback, before its exception line: what its last frame was doing.

Users cut their pastes short, and some tools cut a worker's output: the log ends on a frame of a
traceback, and no line says what failed. Such a log is a failure (an unknown one at least), and the
rank whose prefix the frames carry is the one that failed. When no class explains it, the last frame's
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


_RAISING_STATEMENT = re.compile(r"\s{0,40}(?:raise|assert)\b")


def last_frame_lines(scans: list[SourceScan], names: list[str], not_failures: set[int]) -> list[Observation]:
    """The last frame's `File ...` line and source line of each source whose log ends inside a
    traceback (see `_cut_at`): the process was reporting an exception when its log ended, which
    no run that went on to finish leaves behind. `not_failures`: the sources whose last lines
    report an exception the run survived (see salient.reports_at_the_end). Line numbers count back
    from the log's end over the kept tail, which drops blank lines: only the words are used. A
    rank prefix on them is kept."""
    found: list[Observation] = []
    for scan in scans:
        if scan.source in not_failures or not ends_near_a_frame(scan.tail):
            continue
        prefixes = [parse_prefix(text) for text in scan.tail]
        messages = [prefix.message for prefix in prefixes]
        frame_at = _cut_at(messages)
        if frame_at is None:
            continue
        kept = _trimmed(messages)
        first = scan.lines - (len(kept) - 1 - frame_at)
        for offset, message in enumerate(kept[frame_at:]):
            hit = LineHit(source=scan.source, line=first + offset, text=message, patterns=[])
            found.append(Observation(hit=hit, source_name=names[scan.source], rank=prefixes[frame_at + offset].rank,
                                     host=None, time=None, message=message.strip(), order=-1))
    return found


def _trimmed(messages: list[str]) -> list[str]:
    """Without the blank and caret-only lines at the end."""
    end = len(messages)
    while end and (not messages[end - 1].strip() or _CARETS.match(messages[end - 1])):
        end -= 1
    return messages[:end]


def _cut_at(messages: list[str]) -> int | None:
    """Where the last frame starts, when the messages end on it (its `File` line, then at most
    its source line) after a traceback's header, or on a frame whose source line raises (`raise ...`,
    `assert ...`), which only an exception's traceback ends on. Other frames without their header are
    not enough: healthy logs end on stacks printed on purpose (`traceback.print_stack`, a logged graph
    break), whose last frame is the call that printed them."""
    messages = _trimmed(messages)
    if messages and is_frame_line(messages[-1]):
        frame_at = len(messages) - 1
    elif len(messages) > 1 and is_frame_line(messages[-2]) and not _EXCEPTION_LINE.match(messages[-1]):
        frame_at = len(messages) - 2
    else:
        return None  # something follows the last frame and its source line: the exception, or more
    raising = frame_at + 1 < len(messages) and _RAISING_STATEMENT.match(messages[frame_at + 1]) is not None
    return frame_at if raising or any(TRACEBACK_HEADER in m for m in messages[:frame_at]) else None
