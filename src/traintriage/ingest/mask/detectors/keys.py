"""PEM private-key blocks (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted, PGP).

The header and footer lines stay (they tell a reader a key was printed); the body goes.
A block printed on one line (a JSON string with ``\\n`` escapes, as in a GCP service-account
file) is masked by ``PRIVATE_KEY``; a block over many lines is followed by ``PemBlock``,
which the masker keeps across lines and chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from traintriage.ingest.mask.model import Detector, LazyRegex

_LABEL = r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----"

PRIVATE_KEY = Detector(
    name="private-key",
    kind="PRIVATE_KEY",
    prefilter=(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY",),
    pattern=LazyRegex(
        _LABEL + r"(?:\\[rn]|[ \t])*(?P<s>[A-Za-z0-9+/=][^\"'\n]*?)"
        r"(?=(?:\\[rn])?-----END|\\?[\"']|$)"
    ),
    priority=120,
    doc="Private-key blocks: the one-line (escaped) form here; the multi-line form via PemBlock.",
)

_OPENS_BLOCK = re.compile(_LABEL + r"[\s\"'|>,]*$")
_ENDS_BLOCK = re.compile(r"-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----")
_BODY = re.compile(
    r"^(?P<lead>\s*)(?P<b>[A-Za-z0-9+/]+={0,2})\s*$"
    r"|^(?P<lead2>\s*(?:\[[^\]]{1,40}\]:?|[\w.:-]{1,60}:)[ \t]*)(?P<b2>[A-Za-z0-9+/]{16,}={0,2})\s*$"
)
_ARMOR_HEADER = re.compile(r"^\s*(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset)\s*:")

MAX_BLOCK_LINES = 400
MAX_STRAY_LINES = 3


@dataclass
class PemBlock:
    """Where we are inside a multi-line private key, carried from line to line."""

    active: bool = False
    lines: int = 0
    stray: int = 0
    identity: str = ""

    def opens(self, line: str) -> bool:
        """Start following a block if ``line`` ends with a BEGIN ... PRIVATE KEY header."""
        if _OPENS_BLOCK.search(line):
            self.active, self.lines, self.stray, self.identity = True, 0, 0, ""
            return True
        return False

    def body_span(self, line: str) -> tuple[int, int] | None:
        """The base64 span of a body line to hide; None when the line is not body.

        Ends the block at its footer, after ``MAX_BLOCK_LINES``, or after a few lines that
        are plainly not part of it (a truncated key must not swallow the log).
        """
        self.lines += 1
        if _ENDS_BLOCK.search(line) or self.lines > MAX_BLOCK_LINES:
            self.active = False
            return None
        match = _BODY.match(line)
        if match:
            self.stray = 0
            group = "b" if match.group("b") is not None else "b2"
            if not self.identity:
                self.identity = match.group(group)
            return match.span(group)
        if line.strip() and not _ARMOR_HEADER.match(line):
            self.stray += 1
            if self.stray >= MAX_STRAY_LINES:
                self.active = False
        return None


DETECTORS = (PRIVATE_KEY,)
