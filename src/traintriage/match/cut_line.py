"""A log whose last line stops inside a failure message.

Pastes are cut where the user's selection ended, a terminal's scroll-back or a job's output
stops where the process was killed, and a collector keeps the first N characters of a line: the
decisive line is then only the start of a message (`... Some NCCL operations have failed or
timed out. Due to the asyn`), and a signature that spells the whole message misses it. Here the
log's last line counts as a hit of a root signature when it ends inside the literal text the
signature opens with: at least MIN_CUT characters of it, the longest such stretch in the line
(`Sizes of tensors must match` ends a longer message of another entry's), and one no other
entry's signature opens with too.

Runs on one line per log against the signatures' opening literals (plain `str.find`), so its
cost does not grow with the log.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_CUT = 32
"""Characters of a signature's opening literal the cut line must hold: fewer would name a
prefix many messages share (`RuntimeError: Expected `), or a whole message that a longer one
starts with (`No such file or directory: ` opens a DeepSpeed signature's missing shard)."""

MIN_LITERAL = 40
"""Opening literals shorter than this are not looked for: the cut could not leave enough out."""

ANCHOR = 16
"""The literal's first characters, looked up in the line to find where the message starts."""

_META = set(".^$*+?{}[]()|")
_ESCAPED_LITERAL = set(".^$*+?{}[]()|\\/-'\"#:,=<>!@%&~`;_ ")


def leading_literal(regex: str) -> tuple[str, bool] | None:
    """The text every match of `regex` starts with, and whether it is matched regardless of
    case (`(?i)`, or a letter spelled `[Cc]`); None when the pattern opens with another class, a
    group or an alternation."""
    caseless = regex.startswith("(?i)")
    body = regex[4:] if caseless else regex
    if body.startswith(r"\b"):
        body = body[2:]
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        pair = body[index : index + 4]
        if _is_case_pair(pair):  # `[Cc]`: the letter in either case
            char, step, caseless = pair[1].lower(), 4, True
        elif char == "\\":
            if index + 1 >= len(body) or body[index + 1] not in _ESCAPED_LITERAL:
                break
            char, step = body[index + 1], 2
        elif char in _META:
            break
        else:
            step = 1
        following = body[index + step : index + step + 1]
        if following and following in "?*{":
            break  # the character is optional or repeated: the literal ends before it
        out.append(char)
        index += step
    literal = "".join(out)
    return (literal.lower() if caseless else literal, caseless) if literal else None


def _is_case_pair(text: str) -> bool:
    """`[Xx]` or `[xX]`: one letter in its two cases, as signatures spell a word either case opens."""
    return (len(text) == 4 and text[0] == "[" and text[3] == "]" and text[1].isalpha()
            and text[1] != text[2] and text[1].lower() == text[2].lower())


@dataclass(frozen=True)
class _Opening:
    pattern: int
    entry_id: str
    literal: str
    caseless: bool


def openings_of(signatures: list[tuple[int, str, str]]) -> list[tuple[int, str, str, bool]]:
    """(pattern id, entry id, opening literal, caseless) of the (pattern id, entry id, regex)
    signatures whose opening literal is long enough to be recognised when cut."""
    found = ((pattern, entry_id, leading_literal(regex)) for pattern, entry_id, regex in signatures)
    return [(pattern, entry_id, *literal) for pattern, entry_id, literal in found
            if literal is not None and len(literal[0]) >= MIN_LITERAL]


class CutLineIndex:
    """The opening literals by their first ANCHOR characters: a line is looked up at each position
    a cut could start from (a dictionary lookup each), not searched once per signature, and only
    when its last ANCHOR characters occur in some opening at all (one substring search), since
    every log of a fleet asks."""

    def __init__(self, openings: list[tuple[int, str, str, bool]]) -> None:
        self._by_anchor: dict[tuple[bool, str], list[_Opening]] = {}
        for pattern, entry_id, literal, caseless in openings:
            self._by_anchor.setdefault((caseless, literal[:ANCHOR]), []).append(
                _Opening(pattern, entry_id, literal, caseless))
        self._longest = max((len(o[2]) for o in openings), default=0)
        self._joined = "\0".join(o[2] for o in openings if not o[3])
        self._joined_caseless = "\0".join(o[2] for o in openings if o[3])

    @property
    def openings(self) -> list[_Opening]:
        return [opening for group in self._by_anchor.values() for opening in group]

    def signatures_cut_in(self, line: str) -> list[int]:
        """Ids of the root signatures whose opening literal `line` ends inside of: those that
        hold the longest stretch of it, when they all belong to one entry."""
        text = line.rstrip()
        if len(text) < MIN_CUT:
            return []
        lowered = text.lower()
        if text[-ANCHOR:] not in self._joined and lowered[-ANCHOR:] not in self._joined_caseless:
            return []  # the line does not end inside any opening: most lines, at one search
        found: list[_Opening] = []
        for start in range(max(0, len(text) - self._longest), len(text) - MIN_CUT + 1):
            for caseless, haystack in ((False, text), (True, lowered)):
                for opening in self._by_anchor.get((caseless, haystack[start : start + ANCHOR]), ()):
                    cut = haystack[start:]
                    if len(cut) < len(opening.literal) and opening.literal.startswith(cut):
                        found.append(opening)
            if found:  # the earliest start holds the longest stretch
                break
        if len({opening.entry_id for opening in found}) != 1:
            return []
        return [opening.pattern for opening in found]
