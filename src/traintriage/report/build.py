"""Turn an Analysis into the Diagnosis model of the output contract, with the facts of the
run, the fix chosen for them and the consistency rules (report/consistency.py) applied."""

from __future__ import annotations

import functools
import re
import warnings

from traintriage.analyze.engine import Analysis
from traintriage.analyze.facts import RunFacts, kept_texts, run_facts
from traintriage.analyze.observations import Observation, printed_time, same_rank_context, traceback_before
from traintriage.analyze.scoring import Candidate
from traintriage.ingest.sources import Source
from traintriage.kb.loader import KnowledgeBase
from traintriage.kb.schema import Entry, Role
from traintriage.match.compiler import PatternKind, load_scanner
from traintriage.match.scan import SourceScan
from traintriage.parse.prefix import parse_prefix
from traintriage.parse.traceback import TRACEBACK_HEADER, Frame, Traceback, parse_traceback
from traintriage.report import consistency
from traintriage.report.fixes import choose_fix
from traintriage.report.model import (
    Anomaly,
    Collateral,
    Diagnosis,
    Evidence,
    Facts,
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


_REPORT_RANK = re.compile(r"rank\s*: (\d+) \(local_rank: (\d+)\)")


def own_time(observation: Observation) -> str | None:
    """The time printed on the event's own line, as the report writes times."""
    stamp = printed_time(observation)
    return stamp.isoformat().replace("+00:00", "Z") if stamp is not None else None


def evidence_of(observation: Observation, entry: Entry | None = None) -> Evidence:
    text = observation.hit.text.strip()
    return Evidence(
        source=observation.source_name,
        line=max(1, observation.hit.line),
        rank=observation.rank,
        host=observation.host,
        time=own_time(observation),
        text=text,
        matched=matched_span(text, entry, observation.hit.patterns) if entry is not None else None,
    )


def matched_span(text: str, entry: Entry, pattern_ids: list[int]) -> list[int] | None:
    """Where the entry's signature matched the line: what a shortened quote must keep. Only the
    signatures the scan found on this line are tried (root first, then supporting and collateral
    ones: a hang's evidence is the timeouts it causes), each known to match, with Python `re` on
    the kept line, which the scan caps at a few thousand characters."""
    table = load_scanner().table
    found = {table[i].regex: table[i].role for i in pattern_ids
             if 0 <= i < len(table) and table[i].kind is PatternKind.signature and table[i].entry_id == entry.id}
    for regex in sorted(found, key=lambda r: _ROLE_ORDER.get(found[r], 3)):
        pattern = _python_pattern(regex)
        match = pattern.search(text) if pattern is not None else None
        if match is not None and match.end() > match.start():
            return [match.start(), match.end()]
    return None


_ROLE_ORDER: dict[Role | None, int] = {Role.root: 0, Role.supporting: 1, Role.collateral: 2}


@functools.lru_cache(maxsize=512)
def _python_pattern(regex: str) -> re.Pattern[str] | None:
    """The RE2 signature as a Python pattern; None for the few RE2 forms Python reads otherwise."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(regex)
    except (re.error, FutureWarning, DeprecationWarning):
        return None


def _evidence(candidate: Candidate, entry: Entry) -> list[Evidence]:
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
    return [evidence_of(o, entry) for o in chosen]


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
                time=own_time(observation), rank=observation.rank, what=candidate.entry_id,
                source=observation.source_name, line=observation.hit.line)))
    events.sort(key=lambda pair: pair[0])
    return consistency.unique_rows([event for _, event in events])[:MAX_TIMELINE]


def _facts_out(facts: RunFacts, environment: dict[str, str], entry: Entry) -> Facts:
    return Facts(stack=facts.stack, launcher=facts.launcher, backend=facts.backend, phase=facts.phase,
                 phase_reason=facts.phase_reason, step=facts.step, dtype=facts.dtype, platform=facts.platform,
                 zero_stage=facts.zero_stage, world_size=facts.world_size, ranks_failed=facts.ranks_failed,
                 all_ranks_same=facts.all_ranks_same, stalled=consistency.is_stall(entry),
                 versions=dict(environment))


def _user_frame(analysis: Analysis, own: Traceback | None, nearby: Traceback | None) -> Frame | None:
    """The culprit rank's innermost frame in the user's own code: from the root cause's
    traceback, else from another traceback the same rank printed (`_culprit_traceback`)."""
    first = analysis.root.first if analysis.root else None
    worker = _worker_user_frame(first) if first is not None else None
    if worker is not None:
        return worker
    if own is not None and own.user_frame is not None:
        return own.user_frame
    if first is None:
        return None
    if "Fatal Python error" in first.message:
        return _faulthandler_user_frame(first)
    if nearby is not None and nearby.user_frame is not None:
        return nearby.user_frame
    return _continued_user_frame(first)


_CONTINUED = ("During handling of the above exception", "The above exception was the direct cause")


def _continued_user_frame(first: Observation) -> Frame | None:
    """The user's frame in the traceback Python printed right after the root's own (`During handling of
    the above exception, another exception occurred:`), when the root's ran inside libraries only (a
    TensorFlow session call): the script's line that made the call, even when that second traceback is
    cut before its own exception line."""
    after = [parse_prefix(text).message for text in first.hit.after]
    start = next((i for i, text in enumerate(after[:4]) if text.startswith(_CONTINUED)), None)
    if start is None:
        return None
    block: list[str] = []
    for text in after[start + 1 :]:
        if block and (TRACEBACK_HEADER in text or text.startswith(_CONTINUED)):
            break  # a third traceback: not the script's call of the root's
        if block or TRACEBACK_HEADER in text:
            block.append(text)
    parsed = parse_traceback(block, "")
    return parsed.user_frame if parsed is not None else None


def _own_traceback(analysis: Analysis, rank: int | None) -> Traceback | None:
    """The root cause line's own traceback, unless another rank than the culprit printed it."""
    first = analysis.root.first if analysis.root else None
    if first is not None and rank is not None and first.rank is not None and first.rank != rank:
        return None
    return analysis.traceback


def _culprit_traceback(analysis: Analysis, rank: int | None) -> Traceback | None:
    """A traceback with a user frame that the culprit rank printed (a chained exception, the
    re-raise in the script), nearest to the root cause's first line. A line's rank is the
    one the analysis placed it with, so torchrun's `[default1]:` counts as rank 1 exactly
    when the analysis says it does."""
    first = analysis.root.first if analysis.root else None
    if first is None:
        return None
    nearby = [o for o in analysis.observations if o.hit.before
              and (o.hit.source == first.hit.source or (rank is not None and o.rank == rank))]
    nearby.sort(key=lambda o: (o.hit.source != first.hit.source, abs(o.hit.line - first.hit.line)))
    for observation in nearby:
        if rank is not None and observation.rank is not None and observation.rank != rank:
            continue
        if not any(TRACEBACK_HEADER in line for line in observation.hit.before):
            continue
        # An untagged line (torchrun's agent) keeps its context to the culprit's lines, so a
        # waiting rank's traceback printed just before it is not taken for the culprit's.
        owner = observation.rank if observation.rank is not None else rank
        context = same_rank_context(observation.hit.before, owner, local_rank=observation.local_rank)
        parsed = parse_traceback([c.message for c in context], observation.hit.text)
        if parsed is not None and parsed.user_frame is not None:
            return parsed
    return None


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]{0,200}(?:Error|Exception|Interrupt|Exit)\b")


def _worker_user_frame(line: Observation) -> Frame | None:
    """A DataLoader worker's error is re-raised in the main process with the worker's own
    traceback after it (`Original Traceback`): the user's frame there is the one to fix."""
    after = [context.message for context in same_rank_context(line.hit.after, line.rank)]
    start = next((i for i, text in enumerate(after) if text.startswith("Original Traceback")), None)
    if start is None:
        return None
    block = after[start:]
    end = next((i for i, text in enumerate(block[1:], 1) if _EXCEPTION_LINE.match(text)), len(block))
    parsed = parse_traceback(block[:end], block[end] if end < len(block) else "")
    return parsed.user_frame if parsed is not None else None


_FAULTHANDLER_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)')


def _faulthandler_user_frame(fatal: Observation) -> Frame | None:
    """faulthandler prints the crashing thread's frames after `Fatal Python error`, most
    recent first: the first one in the user's code."""
    lines = [context.message for context in same_rank_context(fatal.hit.after, fatal.rank)]
    start = next((i for i, text in enumerate(lines) if text.startswith("Current thread")), 0)
    for text in lines[start:]:
        match = _FAULTHANDLER_FRAME.match(text)
        if match:
            frame = Frame(file=match.group(1), line=int(match.group(2)), function=match.group(3))
            if frame.is_user_code:
                return frame
    return None


def _fix(entry: Entry, facts: RunFacts) -> FixAdvice:
    chosen = choose_fix(entry, facts)
    more = f"traintriage kb show {entry.id}" if chosen.left_out else None
    return FixAdvice(summary=entry.fix.summary, steps=chosen.steps, code=chosen.code, chosen=chosen.chosen,
                     because=chosen.because, more=more)


def _report_ranks(scans: list[SourceScan]) -> dict[int, int]:
    """torchrun's failure report: local rank -> global rank, where the mapping is unambiguous."""
    pairs: dict[int, set[int]] = {}
    for text in kept_texts(scans):
        for match in _REPORT_RANK.finditer(text):
            pairs.setdefault(int(match.group(2)), set()).add(int(match.group(1)))
    return {local: next(iter(ranks)) for local, ranks in pairs.items() if len(ranks) == 1}


def _raised_from_your_code(salient: list[Observation]) -> list[str]:
    """For an unknown failure: where the last salient exception left the user's code, when its
    traceback shows that (a check the project makes on purpose, a class the KB lacks)."""
    for observation in reversed(salient):
        traceback = traceback_before(observation) if observation.hit.before else None
        frame = traceback.user_frame if traceback is not None else None
        if frame is not None:
            return [f"The exception was raised from your code at {frame.file}:{frame.line} in {frame.function}."]
    return []


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
            notes=_raised_from_your_code(analysis.salient) if failed else [],
            candidates=[CandidateOut(id=c.entry_id, confidence=analysis.confidence.get(c.entry_id, 0.0))
                        for c in analysis.ranked[:5]],
            initiating_rank=analysis.initiating_rank if failed else None,
            warnings=warnings,
            stats=stats,
        )
    entry = kb.entries[root.entry_id]
    facts = run_facts(scans, root, entry, analysis.traceback, [p for scan in scans for p in scan.metrics], seen_set(
        analysis))
    suspects = consistency.local_rank_mapped(analysis.suspects, facts, _report_ranks(scans))
    verdict = consistency.rank_verdict(suspects, entry, facts, _ranks_of(root), analysis.seen_ranks)
    initiating = verdict.initiating
    culprit = initiating if initiating is not None else (root.first.rank if root.first else None)
    own = _own_traceback(analysis, culprit)
    nearby = None if own is not None and own.user_frame is not None else _culprit_traceback(analysis, culprit)
    frame = _user_frame(analysis, own, nearby)
    # Another rank's traceback ended at the root line: the exception shown is the culprit's own.
    traceback = own if own is not None or analysis.traceback is None else nearby
    root_out = RootCause(
        id=entry.id,
        title=entry.title,
        category=entry.category.value,
        severity=entry.severity.value,
        confidence=analysis.confidence.get(entry.id, 0.0),
        summary=entry.summary,
        evidence=_evidence(root, entry),
        exception=(traceback.chained_from or traceback.exception) if traceback else None,
        user_frame=UserFrame(file=frame.file, line=frame.line, function=frame.function) if frame else None,
        report_summary=entry.report_summary or first_sentence(entry.summary),
    )
    collateral = [
        Collateral(id=c.entry_id, title=kb.entries[c.entry_id].title, ranks=_ranks_of(c), explained_by=by,
                   count=max(len(c.roots), analysis.matches.get(c.entry_id, 0)))
        for c, by in analysis.collateral
    ]
    collateral = consistency.without_initiator(collateral, initiating)
    collateral_ranks = sorted({r for c in collateral for r in c.ranks} - set(verdict.failed))
    collateral, backend_notes = consistency.named_for_backend(collateral, facts, initiating)
    for item in collateral:
        item.ranks = [r for r in item.ranks if r not in verdict.failed]
    return Diagnosis(
        status=Status.failure,
        root_cause=root_out,
        candidates=[CandidateOut(id=c.entry_id, confidence=analysis.confidence.get(c.entry_id, 0.0))
                    for c in analysis.ranked[:5]],
        initiating_rank=initiating,
        suspects=[Suspect(rank=s.rank, host=s.host, reason=s.reason) for s in suspects],
        ranks=Ranks(seen=seen, failed=verdict.failed, collateral=collateral_ranks),
        collateral=collateral,
        anomalies=anomalies,
        timeline=_timeline(analysis),
        fix=_fix(entry, facts),
        verify=entry.verify,
        environment=analysis.environment,
        facts=_facts_out(facts, analysis.environment, entry),
        notes=verdict.notes + backend_notes,
        warnings=warnings,
        stats=stats,
    )


def seen_set(analysis: Analysis) -> set[int]:
    return set(analysis.seen_ranks)


def first_sentence(text: str) -> str:
    """The first whole sentence of a text (for an entry without a report_summary)."""
    match = re.search(r"^.*?[.!?](?=\s+[A-Z(`]|$)", " ".join(text.split()))
    return match.group(0) if match else text
