"""Hangs: the run stopped making progress without an error of its own.

Signs, any of which suffice with no crash to explain them: ranks report a collective
timeout while one rank is silent or lags in sequence numbers; or the last training
step is followed only by watchdog/heartbeat lines or by nothing, for far longer than
the step time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median

from traintriage.analyze.observations import Observation
from traintriage.analyze.ranks import watchdog_laggard
from traintriage.analyze.scoring import Candidate
from traintriage.kb.schema import Nature
from traintriage.match.compiler import Scanner
from traintriage.match.scan import SourceScan
from traintriage.parse.metrics import MetricPoint

HANG_FACTOR = 20.0
_TIMEOUT_ENTRIES = ("nccl-watchdog-timeout", "gloo-collective-timeout", "store-connection-lost")
_WAITING = re.compile(r"(?i)(?:watchdog|heartbeat|timed? ?out|timeout|waiting|stuck|hang|dump|faulthandler|Thread 0x)")


@dataclass(frozen=True)
class HangFinding:
    score: float
    rank: int | None
    detail: str
    observation: Observation | None


def hang_finding(
    observations: list[Observation],
    scans: list[SourceScan],
    scanner: Scanner,
    points: list[MetricPoint],
    candidates: dict[str, Candidate],
) -> HangFinding | None:
    crash = [c for c in candidates.values() if c.nature is Nature.root and c.score >= 0.5]
    if crash:
        return None
    timeouts = [o for key in _TIMEOUT_ENTRIES if key in candidates for o in candidates[key].roots]
    seen = {o.rank for o in observations if o.rank is not None} | {p.rank for p in points if p.rank is not None}
    last_step = max((p.step for p in points if p.step is not None), default=None)
    step_note = f"; last step reached {last_step}" if last_step is not None else ""
    if timeouts:
        laggard = watchdog_laggard(timeouts, seen)
        if laggard is not None:
            first = min(timeouts, key=lambda o: o.sort_key)
            return HangFinding(0.85, laggard.rank, f"rank {laggard.rank}: {laggard.reason}{step_note}", first)
    stalled = _stalled_after_progress(scans, points)
    if stalled is not None:
        rank = _behind_rank(points)
        return HangFinding(0.75 if timeouts else 0.7, rank, stalled + step_note, None)
    return None


def _stalled_after_progress(scans: list[SourceScan], points: list[MetricPoint]) -> str | None:
    """Progress stopped: timestamps show a gap far beyond the step time, or the tail only waits."""
    timed = sorted(p.time for p in points if p.time is not None)
    if len(timed) >= 5:
        gaps = [b - a for a, b in zip(timed, timed[1:], strict=False) if b > a]
        step = median(gaps) if gaps else 0.0
        last_seen = max((s.tail_time for s in scans if s.tail_time is not None), default=None)
        if last_seen is not None and step > 0 and last_seen - timed[-1] > HANG_FACTOR * step and last_seen - timed[-1] > 30:
            return f"no progress for {last_seen - timed[-1]:.0f}s after the last step (step time {step:.2g}s)"
    if not points:
        return None
    tails = [line for scan in scans for line in scan.tail[-15:]]
    waiting = [t for t in tails if _WAITING.search(t)]
    if len(waiting) >= 2 and len(waiting) >= len(tails) // 3:
        return "the log ends with only watchdog/timeout/stack-dump lines after the last step"
    return None


def _behind_rank(points: list[MetricPoint]) -> int | None:
    """The rank whose last logged step is behind the others'."""
    last: dict[int, int] = {}
    for point in points:
        if point.rank is not None and point.step is not None:
            last[point.rank] = max(last.get(point.rank, -1), point.step)
    if len(last) < 2 or len(set(last.values())) == 1:
        return None
    lowest = min(last.values())
    behind = [r for r, s in last.items() if s == lowest]
    return behind[0] if len(behind) == 1 else None
