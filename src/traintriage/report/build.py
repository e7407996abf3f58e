"""Turn an Analysis into the Diagnosis model of the output contract."""

from __future__ import annotations

from traintriage.analyze.engine import Analysis
from traintriage.analyze.observations import Observation
from traintriage.analyze.scoring import Candidate
from traintriage.ingest.sources import Source
from traintriage.kb.loader import KnowledgeBase
from traintriage.match.scan import SourceScan
from traintriage.report.model import (
    Anomaly,
    Collateral,
    Diagnosis,
    Evidence,
    FixAdvice,
    Ranks,
    RootCause,
    Stats,
    Status,
    Suspect,
    TimelineEvent,
    UserFrame,
)
from traintriage.report.model import Candidate as CandidateOut

MAX_EVIDENCE = 3
MAX_TIMELINE = 12


def evidence_of(observation: Observation) -> Evidence:
    return Evidence(
        source=observation.source_name,
        line=max(1, observation.hit.line),
        rank=observation.rank,
        host=observation.host,
        time=observation.time.isoformat().replace("+00:00", "Z") if observation.time else None,
        text=observation.hit.text.strip(),
    )


def _evidence(candidate: Candidate) -> list[Evidence]:
    """The first line of each rank involved, earliest first (lines naming a rank before
    launcher summaries that do not), a few at most."""
    chosen: list[Observation] = []
    ranks: set[int | None] = set()
    for observation in sorted(candidate.roots, key=lambda o: (o.rank is None, o.sort_key)):
        if observation.rank in ranks and len(chosen) >= 1:
            continue
        ranks.add(observation.rank)
        chosen.append(observation)
        if len(chosen) >= MAX_EVIDENCE:
            break
    return [evidence_of(o) for o in chosen]


def _ranks_of(candidate: Candidate) -> list[int]:
    return sorted({o.rank for o in candidate.roots if o.rank is not None})


def _timeline(analysis: Analysis) -> list[TimelineEvent]:
    events: list[tuple[tuple[float, int, int], TimelineEvent]] = []
    involved = ([analysis.root] if analysis.root else []) + [c for c, _ in analysis.collateral]
    for candidate in involved:
        per_rank: dict[int | None, Observation] = {}
        for observation in sorted(candidate.roots, key=lambda o: o.sort_key):
            per_rank.setdefault(observation.rank, observation)
        for observation in per_rank.values():
            events.append((observation.sort_key, TimelineEvent(
                time=observation.time.isoformat().replace("+00:00", "Z") if observation.time else None,
                rank=observation.rank, what=candidate.entry_id, source=observation.source_name,
                line=observation.hit.line)))
    events.sort(key=lambda pair: pair[0])
    return [event for _, event in events[:MAX_TIMELINE]]


def build_diagnosis(
    sources: list[Source],
    scans: list[SourceScan],
    analysis: Analysis,
    kb: KnowledgeBase,
    seconds: float,
) -> Diagnosis:
    stats = Stats(sources=len(sources), lines=sum(s.lines for s in scans), bytes=sum(s.bytes for s in scans),
                  seconds=round(seconds, 3))
    warnings = [p.message for s in scans for p in s.problems]
    anomalies = [Anomaly(kind=f.kind, rank=f.rank, step=f.step, detail=f.detail) for f in analysis.anomalies]
    seen = sorted(analysis.seen_ranks)
    root = analysis.root
    if root is None:
        failed = analysis.failed
        status = Status.unknown_failure if failed else Status.no_failure
        return Diagnosis(
            status=status,
            ranks=Ranks(seen=seen),
            anomalies=anomalies,
            environment=analysis.environment,
            unknown=[evidence_of(o) for o in analysis.salient] if failed else [],
            warnings=warnings,
            stats=stats,
        )
    entry = kb.entries[root.entry_id]
    traceback = analysis.traceback
    frame = traceback.user_frame if traceback else None
    root_out = RootCause(
        id=entry.id,
        title=entry.title,
        category=entry.category.value,
        severity=entry.severity.value,
        confidence=analysis.confidence.get(entry.id, 0.0),
        summary=entry.summary,
        evidence=_evidence(root),
        exception=(traceback.chained_from or traceback.exception) if traceback else None,
        user_frame=UserFrame(file=frame.file, line=frame.line, function=frame.function) if frame else None,
    )
    failed_ranks = [analysis.initiating_rank] if analysis.initiating_rank is not None else _ranks_of(root)
    collateral = [
        Collateral(id=c.entry_id, title=kb.entries[c.entry_id].title, ranks=_ranks_of(c), explained_by=by,
                   count=max(len(c.roots), analysis.matches.get(c.entry_id, 0)))
        for c, by in analysis.collateral
    ]
    collateral_ranks = sorted({r for c in collateral for r in c.ranks} - set(failed_ranks))
    return Diagnosis(
        status=Status.failure,
        root_cause=root_out,
        candidates=[CandidateOut(id=c.entry_id, confidence=analysis.confidence.get(c.entry_id, 0.0))
                    for c in analysis.ranked[:5]],
        initiating_rank=analysis.initiating_rank,
        suspects=[Suspect(rank=s.rank, host=s.host, reason=s.reason) for s in analysis.suspects],
        ranks=Ranks(seen=seen, failed=failed_ranks, collateral=collateral_ranks),
        collateral=collateral,
        anomalies=anomalies,
        timeline=_timeline(analysis),
        fix=FixAdvice(summary=entry.fix.summary, steps=list(entry.fix.steps), code=dict(entry.fix.code)),
        verify=entry.verify,
        environment=analysis.environment,
        warnings=warnings,
        stats=stats,
    )
