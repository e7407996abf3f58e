"""Quote a long log line by its deciding part instead of cutting it off at a width.

The part that decides is usually not at the start: the part the failure class's signature
matched (which the quote always keeps), which fields differ between the two ranks of a
collective mismatch, the shapes or sizes in a mismatch message, the tail of an error after a
long launcher prefix. Lines reach this module already capped in length, and the patterns here
have no nested repeats, so quoting stays linear in the line.
"""

from __future__ import annotations

import re

ELLIPSIS = " … "
_FINGERPRINT = re.compile(r"[Rr]ank (\d+) is running collective: CollectiveFingerPrint\(([^)]{0,2000})")
_FIELD = re.compile(r"(\w+)=(\[[^\]]{0,200}\]|[^,]+?)(?:,\s|$)")
_SHAPES = re.compile(r"torch\.Size\(\[[\d, ]{0,80}\]\)|\[\d+(?:, ?\d+){0,7}\]|\(\d+x\d+ and \d+x\d+\)|"
                     r"\b\d+(?:\.\d+)? ?[KMGT]iB\b")
_MESSAGE_START = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Failure)\b:|\berror:|\bERROR\b")
_WORD = re.compile(r"\S+")
MIN_TAIL = 20

Span = tuple[int, int]


def quote(text: str, width: int, keep: Span | None = None) -> str:
    """`text` on one line in about `width` characters; `keep` ([start, end) in `text`, the part
    the signature matched) is always in the quote when it fits the width at all."""
    text, keep = _squeezed(text, keep)
    if len(text) <= width:
        return text
    mismatch = _fingerprint_difference(text)
    if mismatch is not None:
        return mismatch
    if keep is not None and 0 < keep[1] - keep[0] <= width - len(ELLIPSIS) - 1:
        return _around(text, width, keep)
    start = _MESSAGE_START.search(text)
    if start is not None and start.start() > 0 and len(text) - start.start() <= width:
        return "…" + text[start.start():]
    body = text[start.start():] if start is not None else text
    return _with_details(body, width)


def _squeezed(text: str, keep: Span | None) -> tuple[str, Span | None]:
    """Runs of whitespace as one space, and `keep` moved to the same characters."""
    words = list(_WORD.finditer(text))
    if keep is None:
        return " ".join(w.group(0) for w in words), None
    start = end = None
    position = 0
    for word in words:
        if start is None and keep[0] < word.end():
            start = position + max(0, keep[0] - word.start())
        if end is None and keep[1] <= word.end():
            end = position + max(0, keep[1] - word.start())
        position += len(word.group(0)) + 1
    squeezed = " ".join(w.group(0) for w in words)
    if start is None:
        return squeezed, None
    end = len(squeezed) if end is None else end
    return squeezed, (start, max(start, end))


def _around(text: str, width: int, keep: Span) -> str:
    """From the error's start (`RuntimeError:`), else from the line's start when the match is
    near it, through the match, then the sizes and shapes or the tail the width leaves room for.
    A match too far into the line for that is quoted whole after the head of the message (a
    long launcher or logger prefix is not what decides)."""
    limit = width - len(ELLIPSIS) - MIN_TAIL - 1
    message = _MESSAGE_START.search(text, 0, keep[0] + 1)
    match_start = text.rfind(" ", 0, keep[0]) + 1
    if message is not None and len(text) - message.start() + 1 <= width:
        return "…" + text[message.start():]
    if message is not None and keep[1] - message.start() <= limit:
        begin = message.start()
    elif keep[0] <= width // 4 and keep[1] <= limit:
        begin = 0
    else:
        # From the word the match starts in, unless that word is so long (a path glued to
        # `: no space left on device`) that the match would not fit after it.
        begin = match_start if keep[1] - match_start <= width - len(ELLIPSIS) - 1 else keep[0]
        head_start = message.start() if message is not None else 0
        head_room = width - len(ELLIPSIS) - (len(text) - begin) - (1 if head_start else 0)
        if head_room >= MIN_TAIL and begin > head_start:  # the match ends the line: its head, then the match
            return ("…" if head_start else "") + _cut(text[head_start:], head_room) + ELLIPSIS + text[begin:]
    prefix = "…" if begin > 0 else ""
    if len(text) - begin + len(prefix) <= width:
        return prefix + text[begin:]
    return prefix + _with_details(text[begin:], width - len(prefix), keep[1] - begin)


def _fingerprint_difference(text: str) -> str | None:
    """`Rank 0 ... TensorShape=[10] but rank 1 ... TensorShape=[20]`: only the fields that differ."""
    prints = _FINGERPRINT.findall(text)
    if len(prints) < 2:
        return None
    (rank_a, fields_a), (rank_b, fields_b) = prints[0], prints[1]
    a, b = dict(_FIELD.findall(fields_a + ", ")), dict(_FIELD.findall(fields_b + ", "))
    differ = [key for key in a if key in b and a[key] != b[key] and key != "SequenceNumber"]
    if not differ:
        return None
    left = ", ".join(f"{key}={a[key]}" for key in differ)
    right = ", ".join(f"{key}={b[key]}" for key in differ)
    return f"collectives differ: rank {rank_a} has {left}; rank {rank_b} has {right}"


def _with_details(body: str, width: int, keep_end: int = 0) -> str:
    """Head of the message (through `keep_end` at least), then the sizes and shapes it names
    that the head leaves out, or else its tail."""
    head = _cut(body, width, keep_end)
    details = list(dict.fromkeys(m.group(0) for m in _SHAPES.finditer(body) if m.start() >= len(head)))[:4]
    while details:
        suffix = "(" + ", ".join(details) + ")"
        room = width - len(suffix) - len(ELLIPSIS)
        if keep_end == 0:
            room = max(40, room)
        if room >= max(keep_end, 40):
            return _cut(body, room, keep_end) + ELLIPSIS + suffix
        details.pop()
    tail_room = min(width // 3, width - len(ELLIPSIS) - keep_end)
    if tail_room < MIN_TAIL:
        return _cut(body, width - 1, keep_end) + "…"
    head = _cut(body, width - tail_room - len(ELLIPSIS), keep_end)
    return head + ELLIPSIS + _tail(body, min(tail_room, len(body) - len(head) - 1))


def _cut(text: str, width: int, keep_end: int = 0) -> str:
    """At most `width` characters, ending at a word boundary (not before `keep_end`)."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", max(keep_end, width // 2 + 1), width + 1)
    head = text[: cut if cut > 0 else width]
    return head[:keep_end] + head[keep_end:].rstrip(" ,;:")


def _tail(text: str, width: int) -> str:
    start = len(text) - width
    space = text.find(" ", start)
    return text[space + 1 if 0 <= space < start + width // 2 else start:]
