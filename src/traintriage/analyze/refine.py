"""Refinements a regex cannot express: numbers inside a matched line, frames of a traceback.

CUDA OOM messages of every PyTorch version end with the same fragmentation hint, so
only the numbers tell a fragmented cache (enough memory reserved but unallocated to
satisfy the request) from a plain shortage. And the catch-all for plain script errors
only applies when the traceback passes through the user's own code: an exception raised
entirely inside installed tools (a launcher, a serving CLI) is an unknown failure.
"""

from __future__ import annotations

import re

from traintriage.analyze.observations import same_rank_context
from traintriage.analyze.scoring import Candidate
from traintriage.kb.loader import KnowledgeBase
from traintriage.parse.traceback import parse_traceback

USER_CODE = "user-code-exception"

_UNITS = {"B": 1 / 1024**2, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_SIZE = r"(\d+(?:\.\d+)?) ?(B|KiB|MiB|GiB|TiB)"
_REQUESTED = re.compile(r"Tried to allocate " + _SIZE)
_UNALLOCATED_NEW = re.compile(_SIZE + r" is reserved by PyTorch but unallocated")
_RESERVED_OLD = re.compile(_SIZE + r" reserved in total by PyTorch")
_ALLOCATED_OLD = re.compile(_SIZE + r" already allocated")


def _mib(match: re.Match[str] | None) -> float | None:
    return float(match.group(1)) * _UNITS[match.group(2)] if match else None


def fragmentation_ratio(text: str) -> float | None:
    """Reserved-but-unallocated memory over the requested size, when the line says both."""
    requested = _mib(_REQUESTED.search(text))
    unallocated = _mib(_UNALLOCATED_NEW.search(text))
    if unallocated is None:
        reserved, allocated = _mib(_RESERVED_OLD.search(text)), _mib(_ALLOCATED_OLD.search(text))
        if reserved is not None and allocated is not None:
            unallocated = reserved - allocated
    if requested is None or unallocated is None or requested <= 0:
        return None
    return unallocated / requested


def apply(candidates: dict[str, Candidate], kb: KnowledgeBase) -> None:
    _refine_oom(candidates, kb)
    _require_user_frame(candidates)


def _require_user_frame(candidates: dict[str, Candidate]) -> None:
    script_error = candidates.get(USER_CODE)
    if script_error is None:
        return
    for observation in script_error.roots:
        lines = [c.message for c in same_rank_context(observation.hit.before, observation.rank)]
        traceback = parse_traceback(lines, observation.message)
        if traceback is None or not traceback.frames or traceback.user_frame is not None:
            return
    del candidates[USER_CODE]


def _refine_oom(candidates: dict[str, Candidate], kb: KnowledgeBase) -> None:
    oom = candidates.get("cuda-oom")
    fragmented = candidates.get("cuda-oom-fragmentation")
    if oom is None and fragmented is None:
        return
    lines = [o.hit.text for o in (oom.roots if oom else [])] + [o.hit.text for o in (fragmented.roots if fragmented else [])]
    ratios = [r for r in (fragmentation_ratio(t) for t in lines) if r is not None]
    if not ratios:
        if fragmented is not None and oom is not None:
            fragmented.score = min(fragmented.score, oom.score - 0.05)
        return
    is_fragmented = max(ratios) >= 1.0
    winner, loser = (fragmented, oom) if is_fragmented else (oom, fragmented)
    if winner is None:
        source = loser
        assert source is not None
        winner_id = "cuda-oom-fragmentation" if is_fragmented else "cuda-oom"
        if winner_id not in kb.entries:
            return
        winner = Candidate(entry_id=winner_id, score=source.score, nature=source.nature, roots=list(source.roots),
                           supporting=list(source.supporting), reason="compared reserved and requested memory")
        candidates[winner_id] = winner
    if loser is not None:
        winner.score = max(winner.score, loser.score)
        loser.score = winner.score * 0.5  # the numbers decided: the other reading is a weak rival
