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


def last_frame_lines(scans: list[SourceScan], names: list[str]) -> list[Observation]:
    """The last frame's `File ...` line and source line of each source whose log ends inside a
    traceback (a frame after the header, no exception line after it). Their line numbers count
    back from the log's end over the kept tail, which drops blank lines: only the words are used."""
    found: list[Observation] = []
    for scan in scans:
        messages = [parse_prefix(text).message for text in scan.tail]
        while messages and (not messages[-1].strip() or _CARETS.match(messages[-1])):
            messages.pop()
        if not messages or not any(TRACEBACK_HEADER in m for m in messages):
            continue
        frame_at = next((i for i in range(len(messages) - 1, -1, -1) if is_frame_line(messages[i])), None)
        if frame_at is None or len(messages) - frame_at > 2:
            continue  # something follows the last frame and its source line: the exception, or more
        first = scan.lines - (len(messages) - 1 - frame_at)
        for offset, message in enumerate(messages[frame_at:]):
            hit = LineHit(source=scan.source, line=first + offset, text=message, patterns=[])
            found.append(Observation(hit=hit, source_name=names[scan.source], rank=None, host=None, time=None,
                                     message=message.strip(), order=-1))
    return found
