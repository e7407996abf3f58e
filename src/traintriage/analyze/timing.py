"""Hangs: the run stopped making progress without an error of its own.

Signs, any of which suffice when no crash explains them: ranks report a collective
timeout while one rank is named by its peers, lags in sequence numbers or stays
silent; or the last training step is followed only by waiting, stack dumps, or
nothing, for far longer than the step time.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone

from traintriage.analyze.curves import CurveKey, curve_of
from traintriage.analyze.middle import median
from traintriage.analyze.observations import Observation
from traintriage.analyze.ranks import named_faulty_rank, watchdog_laggard
from traintriage.analyze.scoring import Candidate
from traintriage.kb.schema import Nature
from traintriage.match.scan import CLOCK, SourceScan
from traintriage.parse.metrics import MetricPoint
from traintriage.parse.prefix import parse_prefix

NO_PROGRESS = frozenset({"training-hang", "straggler-slow-rank"})
HANG_FACTOR = 20.0
CRASH_SCORE = 0.5
_WAITING_WORDS = ("watchdog", "heartbeat", "timeout", "timedout", "time out", "timed out", "waiting", "stuck",
                  "hang", "dump", "faulthandler", "thread 0x", "most recent call first")
"""Words of a tail line that only waits. Substring tests on the lowered line, not a regex:
the check runs on 15 tail lines of every source, 300,000 lines on a fleet of 20,000 logs."""


@dataclass(frozen=True)
class HangFinding:
    score: float
    rank: int | None
    detail: str
    observation: Observation | None


def is_crash(candidate: Candidate, timeouts: set[int]) -> bool:
    """A root-natured class with at least one line that is not itself a collective timeout
    (the hang and straggler classes' own lines are evidence of no progress, not a crash)."""
    if candidate.nature is not Nature.root or candidate.score < CRASH_SCORE or candidate.entry_id in NO_PROGRESS:
        return False
    return any(o.order not in timeouts for o in candidate.roots)


def hang_finding(
    timeouts: list[Observation],
    faulty: list[Observation],
    scans: list[SourceScan],
    points: list[MetricPoint],
    candidates: dict[str, Candidate],
    seen: set[int],
    members: set[int] | frozenset[int] = frozenset(),
) -> HangFinding | None:
    """`members`: ranks surely of this job (see ranks.watchdog_laggard)."""
    timeout_ids = {o.order for o in timeouts}
    if any(is_crash(c, timeout_ids) for c in candidates.values()):
        return None
    last_step = max((p.step for p in points if p.step is not None), default=None)
    step_note = f"; last step reached {last_step}" if last_step is not None else ""
    if timeouts:
        first = min(timeouts, key=lambda o: o.sort_key)
        named = named_faulty_rank(faulty)
        if named is not None:
            return HangFinding(0.85, named.rank, f"rank {named.rank}: {named.reason}{step_note}", first)
        laggard = watchdog_laggard(timeouts, seen, members)
        if laggard is not None:
            return HangFinding(0.85, laggard.rank, f"rank {laggard.rank}: {laggard.reason}{step_note}", first)
        return None  # every rank timed out alike: the collective timeout itself is the finding
    stalled = _stalled_after_progress(scans, points, _event_times(candidates))
    if stalled is not None:
        return HangFinding(0.7, _behind_rank(points), stalled + step_note, None)
    return None


def _event_times(candidates: dict[str, Candidate]) -> tuple[float, ...]:
    """When the lines the classes matched were logged (a signal, an error, a timeout)."""
    return tuple(o.time.timestamp() for c in candidates.values() for o in c.roots if o.time is not None)


def _stalled_after_progress(scans: list[SourceScan], points: list[MetricPoint], events: tuple[float, ...] = ()
                            ) -> str | None:
    """Progress stopped: timestamps show a gap far beyond the step time before the next thing that happened
    (a matched line, else the end of the log), or the tail only waits. What a stop signal sets off (a slow
    emergency checkpoint, a grace period) takes time too, but after progress ended for a reason."""
    timed = sorted(p.time for p in points if p.time is not None)
    if len(timed) >= 5:
        step = _step_time(points)
        last_seen = max((s.tail_time for s in scans if s.tail_time is not None), default=None)
        if last_seen is not None:
            last_seen = in_year_of(last_seen, timed[-1])
        after = [t for t in (in_year_of(e, timed[-1]) for e in events) if t > timed[-1]]
        ended_by_event = bool(after) and (last_seen is None or min(after) <= last_seen)
        if after:
            last_seen = min(after) if last_seen is None else min(last_seen, min(after))
        if last_seen is not None and step > 0 and last_seen - timed[-1] > max(HANG_FACTOR * step, 30.0) \
                and (ended_by_event or not _ends_in_ordinary_output(scans)):
            return f"no progress for {last_seen - timed[-1]:.0f}s after the last step (step time {step:.2g}s)"
    if not points:
        return None
    tails = [scan.tail[-15:] for scan in scans]
    waiting = sum(_waiting_lines(lines) for lines in tails)
    if waiting >= 3 and waiting >= sum(len(lines) for lines in tails) // 2:
        return "the log ends with only watchdog, timeout or stack-dump lines after the last step"
    return None


_YEAR_1971 = 365 * 86400.0


def in_year_of(stamp: float, reference: float) -> float:
    """A stamp without a year (glog's `W1207 02:37:29.371`, parsed into 1970) moved into the year of a dated
    reference (`2026-12-07 02:36:50,526`), the nearer side of New Year's Eve: a tail of torchrun's glog lines
    after steps logged with full dates would otherwise end fifty years before the last step."""
    if stamp >= _YEAR_1971 or reference < _YEAR_1971:
        return stamp
    year = datetime.fromtimestamp(reference, timezone.utc).year
    moved = datetime.fromtimestamp(stamp, timezone.utc).replace(year=year).timestamp()
    if moved - reference > 183 * 86400:
        moved = datetime.fromtimestamp(stamp, timezone.utc).replace(year=year - 1).timestamp()
    return moved


def _step_time(points: list[MetricPoint]) -> float:
    """The median gap between one process's consecutive timed points. Ranks log the same step
    microseconds apart, so gaps across the interleaved ranks would say a step takes microseconds
    and make any pause after the last step look like a hang."""
    series: dict[tuple[int, CurveKey], list[float]] = defaultdict(list)
    for point in points:
        if point.time is not None:
            series[(point.source, curve_of(point))].append(point.time)
    gaps: list[float] = []
    for times in series.values():
        times.sort()
        gaps.extend(b - a for a, b in zip(times, times[1:], strict=False) if b > a)
    return median(gaps) if gaps else 0.0


def _ends_in_ordinary_output(scans: list[SourceScan]) -> bool:
    """The latest stamped line of the log is the program's own output (an evaluation's results, a summary),
    not a wait, a timeout or a stack dump: the process was alive and printing at the end, so the pause
    before that line was work (a validation pass takes many step times), not a hang."""
    latest = max((s for s in scans if s.tail_time is not None), key=lambda s: s.tail_time or 0.0, default=None)
    if latest is None:
        return False
    line = next((text for text in reversed(latest.tail) if CLOCK.search(text) and parse_prefix(text).time), None)
    return line is not None and not _is_waiting(line) and not _GRAVE.search(line)


_GRAVE = re.compile(r"\b(?:ERROR|CRITICAL|FATAL|Error|Exception|Traceback|SIG[A-Z]{2,5}\d?|[Ss]ignal)\b")
"""Words of a line that is not the program's ordinary output: an error, or a signal that stopped it."""


def _waiting_lines(lines: list[str]) -> int:
    """How many of `lines` only wait; one look at a tail that never does (most of a fleet's)."""
    if not _is_waiting("\n".join(lines)):  # no word spans a newline
        return 0
    return sum(_is_waiting(line) for line in lines)


def _is_waiting(line: str) -> bool:
    lower = line.lower()
    return any(word in lower for word in _WAITING_WORDS)


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
