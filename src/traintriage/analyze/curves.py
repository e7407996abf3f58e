"""Training-curve anomalies: NaN/Inf onset, loss spikes and divergence, grad-norm explosions,
throughput drops, stragglers.

Spikes are judged against a rolling median of the same rank's recent losses (robust
to noise and to the curve's own scale), never against a fixed threshold.
"""

from __future__ import annotations

import math
import operator
import re
from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from traintriage.analyze.middle import median, median_of_sorted
from traintriage.parse.metrics import MetricPoint

ROLLING = 20
SPIKE_FACTOR = 4.0
DIVERGED_FACTOR = 2.0
RISEN_FACTOR = 3.0
"""A run that ends this many times above its first losses diverged from the start."""
STRAGGLER_FACTOR = 1.3
GRAD_EXPLOSION_FACTOR = 10.0
DROP_FACTOR = 2.0
MIN_POINTS = 8


@dataclass(frozen=True)
class CurveFinding:
    kind: str
    rank: int | None
    step: int | None
    detail: str
    point: MetricPoint
    base: float | None = None
    """For a jump, the rolling median it was measured against."""


CurveKey = int | tuple[int, str | None, int] | None
"""One process's curve: its global rank; else, on a log spanning nodes, (source, host, local
rank), so two nodes' `[default0]:` lines stay two curves; else None (untagged lines)."""


def curve_of(point: MetricPoint) -> CurveKey:
    if point.rank is not None:
        return point.rank
    if point.local_rank is not None:
        return (point.source, point.host, point.local_rank)
    return None


def by_rank(points: list[MetricPoint]) -> dict[CurveKey, list[MetricPoint]]:
    """Points per process curve (`curve_of`), in log order; a finding takes its rank from
    the curve's points (None when only the node and local rank are known)."""
    grouped: dict[CurveKey, list[MetricPoint]] = defaultdict(list)
    for point in sorted(points, key=_LOG_ORDER):
        grouped[curve_of(point)].append(point)
    return grouped


_LOG_ORDER = operator.attrgetter("source", "line")
"""The sort key of the grouping each check asks for (~8,000 points a run): no Python call per point."""


def first_nonfinite(points: list[MetricPoint]) -> CurveFinding | None:
    """The earliest point whose loss (or grad norm, when the loss is NaN later) is not finite."""
    best: MetricPoint | None = None
    for point in points:
        if point.loss is not None and not math.isfinite(point.loss):
            key = (point.time or math.inf, point.step if point.step is not None else 1 << 30, point.line)
            if best is None or key < (best.time or math.inf, best.step if best.step is not None else 1 << 30, best.line):
                best = point
    if best is None:
        return None
    return CurveFinding("loss-nan", best.rank, best.step, f"loss became {best.loss} at step {best.step}", best)


def persistent_nonfinite_grad(points: list[MetricPoint]) -> CurveFinding | None:
    """Grad norm NaN/Inf from some step to the end of the log (three points at least, or
    every point of a curve of two or more, or a last point whose loss is exactly 0), while the
    logged loss may stay finite (HF Trainer's `logging_nan_inf_filter` hides NaN losses: when every
    loss of a logging window was NaN it logs `{'loss': 0.0, 'grad_norm': nan}`)."""
    for series in by_rank(points).values():
        grads = [p for p in series if p.grad_norm is not None]
        if not grads or math.isfinite(grads[-1].grad_norm or 0.0):
            continue
        onset = len(grads) - 1
        while onset > 0 and not math.isfinite(grads[onset - 1].grad_norm or 0.0):
            onset -= 1
        if len(grads) - onset >= 3 or (onset == 0 and len(grads) >= 2) or grads[-1].loss == 0.0:
            first = grads[onset]
            return CurveFinding("loss-nan", first.rank, first.step,
                                f"grad norm became {first.grad_norm} at step {first.step} and stayed non-finite", first)
    return None


def recovered_after(points: list[MetricPoint], point: MetricPoint) -> bool:
    """A non-finite value followed by finite losses on the same curve to its end (AMP warm-up, a skipped step);
    a rank's curve may span its stdout and stderr files, where only the clock orders lines."""
    curve = curve_of(point)
    return _ends_finite([p for p in points if curve_of(p) == curve and _after(p, point) and p.loss is not None])


_SKIPPED = re.compile(r"(?i)\bskip(?:ping|ped)\b")
SKIP_NOTICE_LINES = 4
"""Lines after a non-finite loss in which a guard's notice that it skipped the step still counts: one per rank."""


def skipped_by_guard(points: list[MetricPoint], point: MetricPoint, following: Sequence[str] = ()) -> bool:
    """A non-finite loss on a line that says the step was skipped (a trainer's guard, dynamic loss scaling), or
    whose next lines say so (`a rank reported a non-finite loss, skipping this step on all ranks`), while the
    other loss lines of its log stay finite to the end: on data parallelism the rank that met it may log
    nothing else, so its own curve cannot show the recovery."""
    if not _SKIPPED.search(point.text) and not any(_SKIPPED.search(line) for line in following[:SKIP_NOTICE_LINES]):
        return False
    return _ends_finite([p for p in points if p.loss is not None and not _SKIPPED.search(p.text) and _after(p, point)])


def _ends_finite(later: list[MetricPoint]) -> bool:
    """Three losses at least after the non-finite one, the last three finite: the run trained on."""
    return len(later) >= 3 and all(math.isfinite(p.loss or math.nan) for p in later[-3:])


def _after(point: MetricPoint, than: MetricPoint) -> bool:
    """Later in the same log, or, in another rank's own log, later by the clock."""
    if point.source == than.source:
        return point.line > than.line
    return point.time is not None and than.time is not None and point.time > than.time


def spikes(points: list[MetricPoint]) -> list[CurveFinding]:
    """A loss far above the rolling median of the same rank's recent losses."""
    return _first_jumps(points, "loss", SPIKE_FACTOR, 0.5, "loss-spike", MIN_POINTS)


def grad_norm_explosions(points: list[MetricPoint]) -> list[CurveFinding]:
    """A finite grad norm far above the rolling median of the same rank's recent norms."""
    return _first_jumps(points, "grad_norm", GRAD_EXPLOSION_FACTOR, 0.0, "grad-norm-explosion", 0)


def _first_jumps(
    points: list[MetricPoint], field: str, factor: float, min_gap: float, kind: str, min_points: int
) -> list[CurveFinding]:
    """Per rank, the first value above `factor` x the rolling median before it (and `min_gap` above it)."""
    findings: list[CurveFinding] = []
    label = field.replace("_", " ")
    for series in by_rank(points).values():
        finite = [(p, v) for p in series if (v := getattr(p, field)) is not None and math.isfinite(v)]
        if len(finite) < min_points:
            continue
        window = sorted(v for _, v in finite[: ROLLING // 2])  # the ROLLING values before `index`, in order
        for index in range(ROLLING // 2, len(finite)):
            base = median_of_sorted(window)
            point, value = finite[index]
            if base > 0 and value > factor * base and value - base > min_gap:
                findings.append(CurveFinding(kind, point.rank, point.step, f"{label} {base:.4g} -> {value:.4g}", point, base))
                break
            insort(window, value)
            if index >= ROLLING:
                del window[bisect_left(window, finite[index - ROLLING][1])]
    return findings


def throughput_drops(points: list[MetricPoint]) -> list[CurveFinding]:
    """Throughput (or step time) at the end of the log far worse than in its first half."""
    findings: list[CurveFinding] = []
    for series in by_rank(points).values():
        for label, higher_is_better in (("throughput", True), ("step time", False)):
            values = [(p, getattr(p, "throughput" if higher_is_better else "step_time")) for p in series]
            values = [(p, v) for p, v in values if v]
            if len(values) < MIN_POINTS:
                continue
            early = median(v for _, v in values[: len(values) // 2])
            tail = values[-max(3, len(values) // 8) :]
            late = median(v for _, v in tail)
            ratio = early / late if higher_is_better else late / early
            if early > 0 and late > 0 and ratio > DROP_FACTOR:
                findings.append(CurveFinding("throughput-drop", tail[0][0].rank, tail[0][0].step,
                                             f"{label} {early:.4g} in the first half, {late:.4g} at the end", tail[0][0]))
                break
    return findings


def diverged(points: list[MetricPoint], spiked: list[CurveFinding] | None = None) -> CurveFinding | None:
    """The loss ends far above the best level the run had reached and never comes back.

    The baseline is the lowest rolling median before the tail, not the early loss: a
    language model starts near ln(vocab), so its early median hides a later blow-up. Two
    blow-ups a rolling median hides are read too: a loss that only climbed from its first
    values (a learning rate far too high from step one ends many times above where it
    started, which a healthy run never does), and a spike the curve never came down from
    (a few healthy steps, then a jump by orders of magnitude that fills every window).
    `spiked`: the `spikes(points)` the caller already found, to spare the second pass.
    """
    first_spike = {curve_of(finding.point): finding for finding in (spikes(points) if spiked is None else spiked)}
    for curve, series in by_rank(points).items():
        finite = [p for p in series if p.loss is not None and math.isfinite(p.loss)]
        losses = [p.loss for p in finite if p.loss is not None]
        if len(losses) < MIN_POINTS:
            continue
        tail_size = max(3, len(losses) // 8)
        head = losses[:-tail_size]
        window = max(3, min(ROLLING, len(head) // 3))
        rolling = [median(head[i : i + window]) for i in range(0, len(head) - window + 1)]
        best = min(rolling) if rolling else min(head)
        late = median(losses[-tail_size:])
        if best > 0 and late > DIVERGED_FACTOR * best and late - best > 1.0:
            onset = _onset(series, best)
            return CurveFinding("loss-divergence", series[0].rank, onset.step,
                                f"loss fell to {best:.4g}, then rose to {late:.4g} and stayed there", onset or finite[-tail_size])
        start = median(losses[:3])
        if start > 0 and late > RISEN_FACTOR * start and late - start > 1.0:
            onset = _onset(series, start)
            return CurveFinding("loss-divergence", series[0].rank, onset.step,
                                f"loss rose from {start:.4g} at the start to {late:.4g} and stayed there", onset)
        spike = first_spike.get(curve)
        base = spike.base if spike is not None else None
        if spike is not None and base is not None and late > DIVERGED_FACTOR * base and late - base > 1.0 \
                and _after(finite[-tail_size], spike.point):
            return CurveFinding("loss-divergence", spike.rank, spike.step,
                                f"{spike.detail} and never came back (ends at {late:.4g})", spike.point)
    return None


def _onset(series: list[MetricPoint], best: float) -> MetricPoint:
    """The first point after the minimum whose loss is past twice the best level."""
    finite = [p for p in series if p.loss is not None and math.isfinite(p.loss)]
    low = min(range(len(finite)), key=lambda i: finite[i].loss or math.inf)
    return next((p for p in finite[low:] if (p.loss or 0.0) > DIVERGED_FACTOR * best), finite[-1])


def straggler(points: list[MetricPoint]) -> CurveFinding | None:
    """A rank whose median step time is consistently above its peers'; or, when the ranks step in
    lockstep (each step time includes waiting for the slowest), whose time waiting for its batch
    is, over the later half of the run (a pipeline can slow down midway)."""
    curves = [s for s in by_rank(points).values() if s[0].rank is not None]
    found = _slowest({s[0].rank: [p.step_time for p in s if p.step_time] for s in curves}, STRAGGLER_FACTOR)
    if found is not None:
        slowest, own, others = found
        point = next(p for p in points if p.rank == slowest and p.step_time)
        return CurveFinding("straggler", slowest, None,
                            f"rank {slowest} median step {own:.3g}s vs {others:.3g}s on its peers "
                            f"({own / others:.1f}x slower)", point)
    late = {s[0].rank: [p for p in s[len(s) // 2:] if p.data_time is not None] for s in curves}
    found = _slowest({rank: [p.data_time for p in series if p.data_time is not None] for rank, series in late.items()},
                     DATA_WAIT_FACTOR, floor=MIN_DATA_WAIT)
    if found is None:
        return None
    slowest, own, others = found
    point = late[slowest][0]
    return CurveFinding("straggler", slowest, None,
                        f"rank {slowest} waits {own:.3g}s a step for its batch vs {others:.3g}s on its peers "
                        "(its input pipeline holds every rank back)", point)


DATA_WAIT_FACTOR = 3.0
MIN_DATA_WAIT = 0.01
"""A batch wait that slows a step: at least 10 ms, three times the peers' (which round to 0 when the
loader keeps up)."""


def _slowest(per_rank: dict[int | None, list[float]], factor: float, floor: float = 0.0
             ) -> tuple[int, float, float] | None:
    """The rank whose median is `factor` times its peers' median (at least `floor`) on 60% of its
    points or more: (rank, its median, the peers')."""
    ranked: dict[int, list[float]] = {r: times for r, times in per_rank.items() if r is not None and len(times) >= 5}
    if len(ranked) < 2:
        return None
    medians = {r: median(times) for r, times in ranked.items()}
    slowest = max(medians, key=lambda r: medians[r])
    others = median(v for r, v in medians.items() if r != slowest)
    bar = max(factor * others, floor)
    if bar <= 0 or medians[slowest] < bar:
        return None
    if sum(1 for t in ranked[slowest] if t > bar) / len(ranked[slowest]) < 0.6:
        return None
    return slowest, medians[slowest], others
