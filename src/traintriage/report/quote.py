"""Quote a long log line by its deciding part instead of cutting it off at a width.

The part that decides is usually not at the start: which fields differ between the two
ranks of a collective mismatch, the shapes or sizes in a mismatch message, the tail of an
error after a long launcher prefix. Lines reach this module already capped in length, and
the patterns here have no nested repeats, so quoting stays linear in the line.
"""

from __future__ import annotations

import re

ELLIPSIS = " … "
_FINGERPRINT = re.compile(r"[Rr]ank (\d+) is running collective: CollectiveFingerPrint\(([^)]{0,2000})")
_FIELD = re.compile(r"(\w+)=(\[[^\]]{0,200}\]|[^,]+?)(?:,\s|$)")
_SHAPES = re.compile(r"torch\.Size\(\[[\d, ]{0,80}\]\)|\[\d+(?:, ?\d+){0,7}\]|\(\d+x\d+ and \d+x\d+\)|"
                     r"\b\d+(?:\.\d+)? ?[KMGT]iB\b")
_MESSAGE_START = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Failure)\b:|\berror:|\bERROR\b")


def quote(text: str, width: int) -> str:
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    mismatch = _fingerprint_difference(text)
    if mismatch is not None:
        return mismatch
    start = _MESSAGE_START.search(text)
    if start is not None and start.start() > 0 and len(text) - start.start() <= width:
        return "…" + text[start.start():]
    body = text[start.start():] if start is not None else text
    return _with_details(body, width)


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


def _with_details(body: str, width: int) -> str:
    """Head of the message, then the sizes and shapes it names that the head leaves out."""
    head = _cut(body, width)
    details = [m.group(0) for m in _SHAPES.finditer(body) if m.start() >= len(head)]
    unique = list(dict.fromkeys(details))[:4]
    if unique:
        room = max(40, width - len(" (" + ", ".join(unique) + ")") - len(ELLIPSIS))
        return _cut(body, room) + ELLIPSIS + "(" + ", ".join(unique) + ")"
    tail_room = width // 3
    return _cut(body, width - tail_room - len(ELLIPSIS)) + ELLIPSIS + _tail(body, tail_room)


def _cut(text: str, width: int) -> str:
    """At most `width` characters, ending at a word boundary."""
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text[: cut if cut > width // 2 else width].rstrip(" ,;:")


def _tail(text: str, width: int) -> str:
    start = len(text) - width
    space = text.find(" ", start)
    return text[space + 1 if 0 <= space < start + width // 2 else start:]
