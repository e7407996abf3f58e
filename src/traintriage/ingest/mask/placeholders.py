"""Numbered placeholders, stable within one log: the same value always gets the same name.

``<IP-1>`` on rank 0 and ``<IP-1>`` on rank 7 are the same host, so correlations survive
masking. A placeholder says the kind and a number, nothing of the value (no prefix, no
length). Memory is bounded: past ``limit`` distinct values, new ones get ``<KIND>`` alone.
"""

from __future__ import annotations

DEFAULT_LIMIT = 1 << 20


class Placeholders:
    """Hands out ``<KIND-n>`` names, numbering each kind from 1 in order of first sight."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._by_identity: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._limit = limit

    def name(self, kind: str, identity: str) -> str:
        """The placeholder for ``identity``; the first kind it was seen under names it."""
        known = self._by_identity.get(identity)
        if known is not None:
            return known
        if len(self._by_identity) >= self._limit:
            return f"<{kind}>"
        number = self._counts.get(kind, 0) + 1
        self._counts[kind] = number
        placeholder = f"<{kind}-{number}>"
        self._by_identity[identity] = placeholder
        return placeholder

    def __len__(self) -> int:
        return len(self._by_identity)

    def items(self) -> list[tuple[str, str]]:
        """(placeholder, identity) pairs handed out so far, in order."""
        return [(name, identity) for identity, name in self._by_identity.items()]
