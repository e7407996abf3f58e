"""The data types of the masking stage: a detector is data, a candidate is one span to hide.

Detectors only say *where* a secret may be; false-positive filters (``filters.py``) say
which of those spans are not secrets after all. Keeping the two apart lets a filter be
shared by many detectors and tested on its own, as gitleaks and detect-secrets do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple


class Candidate(NamedTuple):
    """One span of a line that a detector proposes to replace (a tuple: made per hit, so cheap)."""

    line: str
    start: int
    end: int
    kind: str
    priority: int
    key: str = ""
    learn: bool = False
    identity: str = ""

    @property
    def value(self) -> str:
        """The text the span covers (what must not survive)."""
        return self.line[self.start : self.end]


Filter = Callable[[Candidate], bool]
"""A false-positive test: True means "this candidate is not a secret, keep the text"."""

KindOf = Callable[[re.Match[str], str], str]
"""Names the kind from the match and the full key (e.g. ``WANDB_API_KEY`` -> ``WANDB_KEY``)."""

Normalize = Callable[[str], str]
"""Maps spellings of one value to one identity (``2001:DB8::1`` and ``2001:db8:0::1``)."""


class LazyRegex:
    """A regular expression compiled on first use: compiling all detectors at import costs
    ~8 ms of every start, and a log usually needs a few of them."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source)
        return self._compiled


@dataclass(frozen=True)
class Detector:
    """One kind of secret or personal datum, as data.

    ``prefilter`` holds Hyperscan patterns (single-line, ASCII) that fire on every line the
    precise ``pattern`` could match: they are compiled together into one database that scans
    whole chunks, and only the lines they hit reach Python. ``pattern`` marks the span to hide
    with the named group ``s`` (or the whole match when there is none).
    """

    name: str
    kind: str
    prefilter: tuple[str, ...]
    pattern: LazyRegex
    priority: int
    filters: tuple[Filter, ...] = ()
    kind_of: KindOf | None = None
    normalize: Normalize | None = None
    caseless_prefilter: bool = False
    learn: bool = False
    doc: str = field(default="", compare=False)
