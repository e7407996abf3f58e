"""A recurring incident's fingerprint: root cause plus its evidence with the varying parts removed.

Two runs that die the same way (other ranks, hosts, sizes, addresses, timestamps, paths
under another user's home) get the same fingerprint; alert rules de-duplicate on it.
Evidence lines are clipped to `LINE_CAP` characters first, so Python `re` only ever sees
a bounded slice, and none of the patterns nests quantifiers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

LINE_CAP = 2000

# Order matters: whole tokens (UUIDs, addresses, paths) before the numbers inside them.
_NORMALISERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\[(?:rank|Rank|RANK)\s?\d+\]:?"), ""),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]{0,63}[0-9])(?=[0-9a-fA-F]{0,63}[a-fA-F])[0-9a-fA-F]{8,64}\b"), "<hex>"),
    # A path keeps its last component (the file that matters), not the directories before it.
    (re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.@+-]+)+[/\\]"), "<path>/"),
    (re.compile(r"\d+(?:\.\d+)*"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def normalise(line: str) -> str:
    """The line with numbers, hex, identifiers and directory parts replaced by placeholders."""
    text = line[:LINE_CAP]
    for pattern, replacement in _NORMALISERS:
        text = pattern.sub(replacement, text)
    return text.strip()


def fingerprint(root_cause: str, evidence: Iterable[str]) -> str:
    """A stable 16-hex-digit digest of the root cause and its normalised, de-duplicated evidence."""
    lines = sorted({normalise(text) for text in evidence} - {""})
    digest = hashlib.sha256(root_cause.encode())
    for line in lines:
        digest.update(b"\n" + line.encode())
    return digest.hexdigest()[:16]


def document_fingerprint(document: Mapping[str, Any]) -> str | None:
    """The fingerprint of a Diagnosis document (OUTPUT.md), or None when nothing failed."""
    root = document.get("root_cause")
    if isinstance(root, Mapping):
        texts = [str(e.get("text", "")) for e in root.get("evidence") or [] if isinstance(e, Mapping)]
        return fingerprint(str(root.get("id", "")), texts)
    unknown = document.get("unknown")
    if document.get("status") == "unknown-failure" and isinstance(unknown, list):
        texts = [str(u.get("text", u)) if isinstance(u, Mapping) else str(u) for u in unknown]
        return fingerprint("unknown-failure", texts)
    return None
