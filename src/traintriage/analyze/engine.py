"""From scans to a Diagnosis: score, resolve collateral, place the first failure."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from itertools import islice

from traintriage.analyze import curves, refine
from traintriage.analyze.confidence_map import calibrated
from traintriage.analyze.cut_traceback import last_frame_lines
from traintriage.analyze.desync import Desync, mismatched_collectives
from traintriage.analyze.observations import Observation, local_tags_are_global, traceback_before
from traintriage.analyze.ranks import (
    SuspectRank,
    barrier_missing_ranks,
    earliest_rank,
    launcher_line,
    named_faulty_rank,
    report_ranks,
    suspects_for,
)
from traintriage.analyze.refine import USER_CODE
from traintriage.analyze.salient import (
    all_reported_handled,
    announced_recovery,
    bar_repainted_at_exit,
    completion_lines,
    excused_orders,
    failure_evidence,
    finished_after,
    logged_as_warning,
    logged_with_traceback,
    position,
    reports_at_the_end,
    salient_lines,
    worker_errors,
)
from traintriage.analyze.scoring import Candidate, rank_candidates, score_entries, supporting_hints
from traintriage.analyze.script_error import EMPTY_DATA, EMPTY_DATA_SCORE, divided_by_empty_data
from traintriage.analyze.second_opinion import ALTERNATIVES, alternatives, as_hints, second_opinion
from traintriage.analyze.sigkill import signal_not_oom
from traintriage.analyze.timing import NO_PROGRESS, HangFinding, hang_finding, is_crash
from traintriage.kb.loader import KnowledgeBase
from traintriage.kb.schema import Entry, Nature, Role
from traintriage.match.compiler import PatternKind, Scanner
from traintriage.match.internal import Internal
from traintriage.match.scan import LineHit, SourceScan
from traintriage.parse.environment import extract_environment
from traintriage.parse.metrics import MetricPoint, parse_metric_line
from traintriage.parse.torchrun import FailureReport, is_report_field, parse_root_cause, sigkilled_pid
from traintriage.parse.traceback import Traceback

THRESHOLD = 0.3
DESYNC = "collective-mismatch"
DESYNC_SCORE = 0.9
"""Above a collective timeout's own signature: the timeouts are what the desync looks like."""
_SIGNALLED = "launcher-signal-received"
_STOP_SIGNALS = frozenset({1, 2, 15})
# The process id in the glog prefix of torchrun's agent (`E1206 15:17:54.337000 6485 torch/distributed/...`)
_AGENT_PID = re.compile(r"^\s*[EWIF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ (\d+) ")
"""SIGHUP, SIGINT, SIGTERM: how a launcher or a user stops a worker, not how one dies (by number, as
torchrun's report gives exit codes; `_COLLATERAL_SIGNAL` matches the same signals by name in text)."""
_WAITING_CLASSES = ("gloo-connection-closed", "gloo-collective-timeout")
"""The classes of ranks that only waited for a peer: lost connections and collective timeouts."""
_VICTIM_CLASSES = (*_WAITING_CLASSES, "nccl-watchdog-timeout")
STORE_WAIT = "rendezvous-timeout"
"""A root class, yet its ranks also only waited: for peers that never joined the store, and a peer that
raised before it joined started the failure."""
_WAITS_FOR_A_RAISER = (*_WAITING_CLASSES, STORE_WAIT)
"""Classes whose rankless reports yield to an exception no class explains printed above them."""
WENT_ON_STEPS = 3
"""Progress lines after a caught exception that show the run went on from it, in a log that also failed."""
USER_INTERRUPT = "user-interrupt"
_WARNED_ON = frozenset({"cluster", "environment"})
"""Categories whose warning the run trains on after without having recovered (see _drop_recovered)."""
_AGENT_SIGINT = frozenset({"torchrun-agent-got-sigint", "torchrun-agent-sigint-death-signal"})
"""user-interrupt's signatures of torchrun's agent receiving SIGINT (which it also reports as launcher-signal-received)."""
_WRAPPER_RAISE = re.compile(r"ProcessRaisedException|ProcessExitedException|ChildFailedError|ActorDiedError|RayTaskError")
"""A launcher's exception that wraps a child's error (torch.multiprocessing.spawn's, torchrun's, Ray's for an actor
or a task: the driver prints it, often above the worker's own error)."""
_SOURCE_RAISE = re.compile(r"\s*raise\b")
"""A traceback's source line (`    raise RendezvousTimeoutError`): the exception it raises is the traceback's last line."""
LAUNCHER_WRAPPERS = frozenset({"elastic-child-failed", "slurm-srun-task-exited", "mpi-job-aborted"})
"""Launchers that report a worker's failure; the worker prints its own error (a serving engine's
or a pod's wrapper lines are themselves what it reports)."""
GLOO_TIMEOUT = "gloo-collective-timeout"
MONITORED_BARRIER = "monitored-barrier-timeout"
EXPLAINS_MARGIN = 0.15
NAN_STAYS_SCORE = 0.85
"""A loss that went non-finite and stayed so: within EXPLAINS_MARGIN of the strongest signatures, so that an error it
explains (sampling from NaN probabilities after training) does not hide it."""
EXCUSED_FACTOR = 0.85
_COLLATERAL_SIGNAL = re.compile(r"SIGTERM|SIGHUP|SIGINT|Signal 15\b|got signal: 15|closing signal SIG")


@dataclass
class Analysis:
    """Everything the renderers need, before it becomes the Diagnosis model."""

    ranked: list[Candidate]
    root: Candidate | None
    collateral: list[tuple[Candidate, str]]
    suspects: list[SuspectRank]
    initiating_rank: int | None
    seen_ranks: set[int]
    anomalies: list[curves.CurveFinding]
    environment: dict[str, str]
    traceback: Traceback | None
    salient: list[Observation]
    confidence: dict[str, float]
    failed: bool
    matches: dict[str, int]
    observations: list[Observation] = field(default_factory=list)
    """Every matched line with the rank, host and time `place` gave it: the report reads a
    line's rank from here instead of placing it again."""


def _internal(observations: list[Observation], scanner: Scanner, kind: Internal) -> list[Observation]:
    wanted = set(scanner.by_internal(kind))
    return [o for o in observations if wanted.intersection(o.hit.patterns)]


def _synthetic(entry_id: str, score: float, observation: Observation | None, reason: str) -> Candidate:
    return Candidate(entry_id=entry_id, score=score, nature=Nature.root,
                     roots=[observation] if observation else [], reason=reason)


def _add_finding(
    candidates: dict[str, Candidate], entry_id: str, score: float, observation: Observation | None, reason: str
) -> None:
    """An analysis finding raises the entry's score; lines its own signatures matched stay evidence."""
    existing = candidates.get(entry_id)
    if existing is None:
        candidates[entry_id] = _synthetic(entry_id, score, observation, reason)
        return
    existing.score = max(existing.score, score)
    existing.reason = reason
    if observation is not None and observation not in existing.roots:
        existing.roots.insert(0, observation)


def _observation_at(observations: list[Observation], point: MetricPoint, names: list[str]) -> Observation:
    """The observation of a metric line, made from the point when no pattern matched it."""
    for observation in observations:
        if observation.hit.source == point.source and observation.hit.line == point.line:
            return observation
    stamp = datetime.fromtimestamp(point.time, timezone.utc) if point.time is not None else None
    return Observation(hit=LineHit(source=point.source, line=point.line, text=point.text, patterns=[]),
                       source_name=names[point.source], rank=point.rank, host=None, time=stamp,
                       message=point.text, order=-1)


def _ranks_only_on_last_line(observations: list[Observation], scans: list[SourceScan],
                             points: list[MetricPoint]) -> set[int]:
    """Ranks seen only on a source's last line: a paste cut short may have cut that rank's own
    timeout report in the middle, so it cannot count as the rank that stayed silent."""
    last_line = {scan.source: scan.lines for scan in scans}
    on_last: set[int] = set()
    elsewhere: set[int] = set()
    for o in observations:
        if o.rank is not None:
            (on_last if o.hit.line >= last_line.get(o.hit.source, 0) else elsewhere).add(o.rank)
    return on_last - elsewhere - {p.rank for p in points if p.rank is not None}


def analyze(
    observations: list[Observation], scans: list[SourceScan], kb: KnowledgeBase, scanner: Scanner, names: list[str]
) -> Analysis:
    """`names`: the display name of each source, by index."""
    excused = excused_orders(observations, scanner)
    candidates = score_entries(observations, kb, scanner, excused)
    points = _metric_points(observations, scans, scanner)
    completions = completion_lines(observations, scanner)
    evidence = failure_evidence(observations, scanner, points, excused, completions)
    # Every failure the log shows, a logger reported as handled (`..., skipping this round`, `retrying`).
    handled_only = all_reported_handled(evidence)
    if handled_only:
        evidence = []
    _settle_excused(candidates, kb, points, bool(completions), bool(evidence))
    _drop_recovered(candidates, kb, points, failed_later=bool(evidence), handled_only=handled_only)
    if not evidence:
        _drop_timer_dumps(candidates, points)
        _drop_restarted(candidates, observations, scanner, points, completions)
        _drop_completed(candidates, kb, points, completions)
        _drop_teardown(candidates, completions)
    _drop_later_attempts(candidates, observations, scanner)
    _drop_forced_kills(candidates, observations, scanner)
    _drop_idle_interrupt(candidates, points)
    seen_ranks = {o.rank for o in observations if o.rank is not None} | {p.rank for p in points if p.rank is not None}
    findings = _curve_findings(observations, points, candidates, names)
    anomalies = [f for f in findings if f is not None]

    refuted = refine.apply(candidates, kb)
    timeouts = _internal(observations, scanner, Internal.collective_timeout)
    faulty = _internal(observations, scanner, Internal.faulty_rank)
    cut_short = _ranks_only_on_last_line(observations, scans, points)
    listed = report_ranks(_internal(observations, scanner, Internal.report_rank))
    reports = _reports(observations, scanner, listed)
    reported = listed | {r.rank for r in reports if r.rank is not None}
    # Ranks surely of this job's numbering: they logged training progress or torchrun lists them.
    members = {p.rank for p in points if p.rank is not None} | reported
    hang = hang_finding(timeouts, faulty, scans, points, candidates, seen_ranks - cut_short, members)
    laggard: HangFinding | None = None  # the rank a collective timeout points at, when the wait is the finding
    if hang is not None and _waiting_class_named(candidates, hang) and not _internal(observations, scanner, Internal.stack_dump):
        # A monitored barrier named the rank that never arrived, or gloo timed out waiting for a lagging rank,
        # which hung, lagged or died: only a dump of its stack (faulthandler, py-spy) shows it stuck; without
        # one the waiting class is the finding.
        laggard, hang = hang, None
    desync = _desync(timeouts, candidates) if DESYNC in kb.entries else None
    if desync is not None:
        hang = None  # the laggard of a desync only waited elsewhere
        _add_finding(candidates, DESYNC, DESYNC_SCORE, desync.observation, desync.detail)
    if hang is not None and "training-hang" in kb.entries:
        _add_finding(candidates, "training-hang", hang.score, hang.observation, hang.detail)
    straggling = curves.straggler(points)
    if straggling is not None:
        anomalies.append(straggling)
        if "straggler-slow-rank" in kb.entries and not _has_crash(candidates):
            _add_finding(candidates, "straggler-slow-rank", 0.7, _observation_at(observations, straggling.point, names),
                         straggling.detail)

    ranked = rank_candidates({k: c for k, c in candidates.items() if c.score >= THRESHOLD})
    root, collateral = resolve(ranked, kb)
    if root is not None and root.entry_id in LAUNCHER_WRAPPERS and worker_errors(
            observations, scanner, excused, {o.order for o in root.roots + root.supporting}):
        # The worker's own error is in the log and no class explains it: that is the failure to
        # show (a launcher's report is the answer only when the worker's error is missing).
        root, collateral = None, []
    silent = _silent_peer(root, ranked, observations, scanner, seen_ranks - cut_short)
    if root is not None and (root.nature is Nature.collateral or root.entry_id == STORE_WAIT) and (
            silent is not None or _peer_raised(root, ranked, observations, scanner, excused)
            or _peer_signalled(root, reports)):
        # The victims' class (a peer's connection closed) and another rank's own exception, or its death by
        # a signal, that no class explains: that started it, not the victims' reports of it.
        excused = excused | {o.order for o in root.roots}
        root, collateral = None, []
    if root is not None and MONITORED_BARRIER in candidates:
        root, collateral, excused = _barrier_missed_a_crash(root, collateral, ranked, barrier_missing_ranks(faulty),
                                                             kb, observations, scanner, excused,
                                                             {o.order for o in timeouts})
    killed = signal_not_oom(root, ranked) if root is not None else None
    alternative_reading: str | None = None
    if root is not None and killed is not None:
        # the signal is the finding; running out of host RAM stays the first alternative, another reading of
        # the same line rather than a rival that lowers the confidence
        collateral = [(c, killed.entry_id) for c, _ in collateral if c.entry_id != killed.entry_id]
        ranked = [killed, root] + [c for c in ranked if c is not root and c.entry_id != killed.entry_id]
        alternative_reading, root = root.entry_id, killed
    if root is not None:
        ranked = [root] + [c for c in ranked if c is not root]
    cut_lines = last_frame_lines(scans, names, reports_at_the_end(
        observations, scanner, {scan.source: scan.lines for scan in scans})) if root is None else []
    failed = root is not None or bool(evidence) or bool(cut_lines)
    salient = salient_lines(observations, scanner, excused) if root is None and failed else []
    opinion = second_opinion(salient, kb, scanner, refuted) if salient else None
    cut = cut_lines if not salient else []
    if cut:  # the words of the last frame hint, they never name the root cause
        opinion = as_hints(second_opinion(cut, kb, scanner, refuted))
    if opinion is not None:
        ranked, root = opinion.candidates, opinion.root
    # a division by the length of empty data outranks the catch-all for script errors too (a signature of
    # Python's own exception types)
    raised = salient if root is None else root.roots if root.entry_id == USER_CODE else []
    empty_data = divided_by_empty_data(raised) if EMPTY_DATA in kb.entries else None
    if empty_data is not None:
        root = _synthetic(EMPTY_DATA, EMPTY_DATA_SCORE, empty_data,
                          "division by zero where the divisor is the length of the data (the loader or dataset is empty)")
        ranked = [root] + [c for c in ranked if c.entry_id != EMPTY_DATA]

    hints = supporting_hints(observations, scanner, excused) if root is None and failed else []
    if hints:
        # After the entries of similar wording (a supporting line is often generic: `terminate
        # called`), but after only the first of those a cut traceback's last frame suggests.
        ranked = _with_hints(ranked, hints, lead=1 if cut else len(ranked))

    if root is not None and opinion is None and len(ranked) < ALTERNATIVES:
        ranked = ranked + alternatives(root.roots + salient_lines(observations, scanner, excused), ranked, kb, scanner)

    signalled = [o for o in _internal(observations, scanner, Internal.fatal_signal)
                 if not _COLLATERAL_SIGNAL.search(o.hit.text)]
    agent_lines = _internal(observations, scanner, Internal.agent_failure)
    seen_ranks |= reported
    named = named_faulty_rank(faulty)
    suspects = suspects_for(root, signalled, reports, timeouts, named, agent_lines, seen_ranks - cut_short,
                            observations, members)
    pointed = hang if root is not None and root.entry_id == "training-hang" else \
        laggard if root is not None and root.entry_id == GLOO_TIMEOUT else None
    if pointed is not None and pointed.rank is not None:
        suspects = _leading(SuspectRank(pointed.rank, None, pointed.detail), suspects)
    if root is not None and root.entry_id == DESYNC and desync is not None and desync.observation.rank is not None:
        suspects = _leading(SuspectRank(desync.observation.rank, desync.observation.host, desync.detail), suspects)
    initiating = (_initiating(root, suspects) if root is not None
                  else silent if silent is not None
                  else _unexplained_initiator(suspects, salient or cut, named))

    environment = extract_environment([o.hit.text for o in _internal(observations, scanner, Internal.version)]
                                      + [o.hit.text for o in _internal(observations, scanner, Internal.gpu_model)])
    traceback = _root_traceback(root)
    explained = {c.entry_id for c, _ in collateral}
    raw = (opinion.confidence if opinion is not None
           else _confidence([c for c in ranked if c.entry_id not in explained and c.entry_id != alternative_reading],
                            ranked))
    if empty_data is not None:
        raw = {**raw, EMPTY_DATA: EMPTY_DATA_SCORE}
    raw = {**{h.entry_id: round(h.score, 2) for h in hints}, **raw}  # a hint never lowers an opinion's figure
    confidence = {entry_id: calibrated(value) for entry_id, value in raw.items()}
    return Analysis(ranked=ranked, root=root, collateral=collateral, suspects=suspects,
                    initiating_rank=initiating, seen_ranks=seen_ranks, anomalies=anomalies,
                    environment=environment, traceback=traceback, salient=salient, confidence=confidence,
                    failed=failed, matches=_root_matches(scans, scanner), observations=observations)


def _leading(finding: SuspectRank, suspects: list[SuspectRank]) -> list[SuspectRank]:
    """An analysis finding's rank first, with its reason, instead of a weaker reason for the same rank."""
    return [finding] + [s for s in suspects if s.rank != finding.rank]


def _with_hints(ranked: list[Candidate], hints: list[Candidate], lead: int) -> list[Candidate]:
    """The first `lead` candidates, then the hints they do not already offer, then the rest."""
    offered = {c.entry_id for c in ranked[:lead]}
    fresh = [h for h in hints if h.entry_id not in offered]
    hinted = {h.entry_id for h in fresh}
    return ranked[:lead] + fresh + [c for c in ranked[lead:] if c.entry_id not in hinted]


def _root_matches(scans: list[SourceScan], scanner: Scanner) -> dict[str, int]:
    """Matching lines per entry over the whole log, beyond the lines kept as evidence: the
    busiest of its root signatures (several of them often match the same line)."""
    per_pattern: dict[int, int] = {}
    for scan in scans:
        for pattern, count in scan.counts.items():
            per_pattern[pattern] = per_pattern.get(pattern, 0) + count
    totals: dict[str, int] = {}
    for pattern, count in per_pattern.items():
        info = scanner.table[pattern]
        if info.kind is PatternKind.signature and info.role is Role.root:
            totals[info.entry_id] = max(totals.get(info.entry_id, 0), count)
    return totals


def _settle_excused(
    candidates: dict[str, Candidate], kb: KnowledgeBase, points: list[MetricPoint], completed: bool, failed: bool
) -> None:
    """Lines an `excludes` pattern excused (an OOM the trainer says it recovers from, a
    library TensorFlow could not load at import and does without) count only when training
    made no progress after them and never completed: then the recovery failed. A class
    that is an error also needs the run to show it failed (a traceback, exception, fatal
    line or non-zero exit); for a stall, the missing progress is the failure."""
    for entry_id, candidate in list(candidates.items()):
        if not candidate.excused:
            continue
        last = max(candidate.roots, key=lambda o: (o.hit.source, o.hit.line))
        if (completed or (not failed and not _is_stall(kb.get(entry_id)))
                or any(p.source == last.hit.source and p.line > last.hit.line for p in points)
                or _failed_later_otherwise(last, candidates)):
            del candidates[entry_id]
        else:
            candidate.score *= EXCUSED_FACTOR
            candidate.reason += "; no progress after the recovery attempt"


def _earlier_in_same_log(first: Observation, second: Observation) -> bool:
    """`first` was printed before `second`, in the same source."""
    return first.hit.source == second.hit.source and first.hit.line < second.hit.line


def _failed_later_otherwise(last: Observation, candidates: dict[str, Candidate]) -> bool:
    """Another class's own (not excused) root line after the excused one, in the same log: the run went past
    the excused warning and failed of that, which names the failure."""
    return any(not other.excused and other.nature is Nature.root
               and any(_earlier_in_same_log(last, o) for o in other.roots)
               for other in candidates.values())


def _drop_recovered(candidates: dict[str, Candidate], kb: KnowledgeBase, points: list[MetricPoint],
                    failed_later: bool, handled_only: bool = False) -> None:
    """An exception the run went on from: a class whose every line is an exception a logger printed with
    its traceback (`logger.exception`, `exc_info=True`: the program caught it) or a record at warning level
    (`corrupt image ...; substituting sample 80`), and is followed by training progress of the same rank, is
    not what stopped the run. When the log shows a failure it did not recover from, one step is not enough:
    a rank that dies leaves its peers' next line behind. Two kinds of warning do not count (_WARNED_ON): a
    stop from outside (a Ctrl-C, a time limit, an eviction), announced by a warning and followed by an
    orderly shutdown's last reports, and an environment the run goes on without (`CUDA probe failed,
    continuing on CPU`), which it does degraded. A logger's record that says the program carries on
    (announced_recovery) is enough without progress when a later failure of another class stopped the run,
    or when every failure the log shows was reported that way (`handled_only`)."""
    steps = WENT_ON_STEPS if failed_later else 1

    def went_on(observation: Observation, entry: Entry | None) -> bool:
        warned = logged_as_warning(observation) and (entry is None or entry.category.value not in _WARNED_ON)
        return ((warned or logged_with_traceback(observation)) and _progress_after(observation, points, steps)
                and not bar_repainted_at_exit(observation, points)) or (
            announced_recovery(observation) and (handled_only or _failed_later_otherwise(observation, candidates)))

    _drop_if_every_line(candidates, kb, went_on)


_TIMER_DUMP = re.compile(r"Timeout \(\d+:\d{2}:\d{2}(?:\.\d+)?\)!")


def _drop_timer_dumps(candidates: dict[str, Candidate], points: list[MetricPoint]) -> None:
    """faulthandler.dump_traceback_later prints every thread's stack when its timer fires, hung or not
    (`repeat=True` dumps on every period): a hang whose every dump is followed by more training of the same
    process is a run that was only being watched."""
    hang = candidates.get("training-hang")
    if hang is not None and hang.roots and all(_TIMER_DUMP.search(o.hit.text) and _progress_after(o, points)
                                               for o in hang.roots):
        del candidates["training-hang"]


def _drop_if_every_line(candidates: dict[str, Candidate], kb: KnowledgeBase,
                        went_on: Callable[[Observation, Entry | None], bool]) -> None:
    """Drop each root-natured class (not a stall: its failure is the missing progress) whose every line
    the run went on from (`went_on` of the line and the class's entry)."""
    for entry_id, candidate in list(candidates.items()):
        entry = kb.get(entry_id)
        if candidate.nature is not Nature.root or not candidate.roots or _is_stall(entry):
            continue
        if all(went_on(o, entry) for o in candidate.roots):
            del candidates[entry_id]


def _drop_restarted(candidates: dict[str, Candidate], observations: list[Observation], scanner: Scanner,
                    points: list[MetricPoint], completions: list[Observation]) -> None:
    """torchrun restarted its workers after a failure (`--max-restarts`) and the new attempt trained on
    and finished: what failed before the restart did not end the run."""
    restarts = _internal(observations, scanner, Internal.agent_failure)
    if not restarts or not completions:
        return
    restart = max(restarts, key=position)
    done = max(completions, key=position)
    if done.hit.source != restart.hit.source or done.hit.line < restart.hit.line or not any(
            p.source == restart.hit.source and restart.hit.line < p.line < done.hit.line
            and (p.step is not None or p.loss is not None) for p in points):
        return
    for entry_id, candidate in list(candidates.items()):
        if all(position(o) <= position(restart) for o in candidate.roots):  # the report of the restart too
            del candidates[entry_id]


def _drop_later_attempts(candidates: dict[str, Candidate], observations: list[Observation], scanner: Scanner) -> None:
    """One torchrun agent reported a failed worker twice or more: it restarted the workers (`--max-restarts`)
    and the new attempt failed too, often only because the old one's failure left a stale peer (a refused Gloo
    connection, a closed store). When a class of the first attempt (up to the agent's first report) is
    neither a wait for a peer nor a launcher's wrapper, a class seen only after that report is not the cause."""
    by_agent: dict[tuple[int, str], list[Observation]] = {}
    for report in sorted(_internal(observations, scanner, Internal.agent_failure), key=position):
        agent = _AGENT_PID.match(report.hit.text)
        if agent is not None:
            by_agent.setdefault((report.hit.source, agent.group(1)), []).append(report)
    restarted = [reports for reports in by_agent.values() if len(reports) > 1]
    if not restarted:
        return
    reports = min(restarted, key=lambda r: position(r[0]))
    first, last = position(reports[0]), position(reports[-1])
    if not any(entry_id not in _VICTIM_CLASSES and entry_id not in LAUNCHER_WRAPPERS
               and any(o.hit.source == first[0] and position(o) <= first for o in c.roots)
               for entry_id, c in candidates.items()):
        return
    for entry_id, candidate in list(candidates.items()):
        # only the agent's own later attempts: another node's agent may print its output after this one's
        if candidate.roots and all(first < position(o) < last for o in candidate.roots):
            del candidates[entry_id]


_FORCED_PID = re.compile(r"Unable to shutdown process (\d+) via")


def _drop_forced_kills(candidates: dict[str, Candidate], observations: list[Observation], scanner: Scanner) -> None:
    """A worker that outlived the launcher's SIGTERM is SIGKILLed (`Unable to shutdown process P via 15,
    forcefully exiting via 9`): its `exitcode: -9 (pid: P)` is the launcher stopping a run that had already
    failed, never the cause. A class that rests only on such reports goes."""
    forced = {match.group(1) for o in _internal(observations, scanner, Internal.agent_forced_kill)
              if (match := _FORCED_PID.search(o.hit.text)) is not None}
    if not forced:
        return
    for entry_id, candidate in list(candidates.items()):
        if candidate.roots and all(sigkilled_pid(o.message) in forced for o in candidate.roots):
            del candidates[entry_id]


def _drop_idle_interrupt(candidates: dict[str, Candidate], points: list[MetricPoint]) -> None:
    """torchrun's agent got SIGINT (a Ctrl-C) and nothing else says the user stopped the run: with no
    training step logged before it, the run had not trained yet or had hung (users stop a hung job so),
    and the signal is the launcher's class, not a stop of steady training."""
    interrupt = candidates.get(USER_INTERRUPT)
    if interrupt is None or not interrupt.signatures <= _AGENT_SIGINT:
        return
    first = min(interrupt.roots, key=position)
    if not any(p.source == first.hit.source and p.line < first.hit.line and (p.step is not None or p.loss is not None)
               for p in points):
        del candidates[USER_INTERRUPT]


def _drop_completed(candidates: dict[str, Candidate], kb: KnowledgeBase, points: list[MetricPoint],
                    completions: list[Observation]) -> None:
    """A class whose every line is followed by more training steps of the same rank, or was logged
    with its traceback by a logger, and then by the run's own report that training finished did not
    stop the run (a probe that failed and was worked around, an error a library or the script caught)."""
    if completions:
        _drop_if_every_line(candidates, kb, lambda o, _entry: (_progress_after(o, points) or logged_with_traceback(o)) and any(
            finished_after(o, c) for c in completions))


def _drop_teardown(candidates: dict[str, Candidate], completions: list[Observation]) -> None:
    """With no failure evidence, a collateral class (one that follows a failure elsewhere) whose every line
    comes after the run's report that training finished, in the same log, is the teardown of a finished run:
    the node hosting the rendezvous store exits first, and the last agents lose their connection to it."""
    for entry_id, candidate in list(candidates.items()):
        if candidate.nature is Nature.collateral and candidate.roots and all(
                any(_earlier_in_same_log(done, o) for done in completions)
                for o in candidate.roots):
            del candidates[entry_id]


def _progress_after(observation: Observation, points: list[MetricPoint], steps: int = 1) -> bool:
    """At least `steps` progress points of the observation's rank after it (stops counting there)."""
    later = (p for p in points if p.source == observation.hit.source and p.line > observation.hit.line
             and (p.step is not None or p.loss is not None)
             and (observation.rank is None or p.rank == observation.rank))
    return next(islice(later, steps - 1, None), None) is not None


_STALL_TAGS = frozenset({"hang", "stall", "deadlock", "no-progress"})


def _is_stall(entry: Entry | None) -> bool:
    """A class whose failure is the missing progress (the same rule as report/consistency.py)."""
    if entry is None:
        return False
    return bool(_STALL_TAGS & set(entry.tags)) or (entry.category.value == "distributed" and entry.id.endswith("-timeout"))


def _metric_points(observations: list[Observation], scans: list[SourceScan], scanner: Scanner) -> list[MetricPoint]:
    """Sampled curve points, plus every non-finite value the scanner found exactly."""
    points = [p for scan in scans for p in scan.metrics]
    sampled = {(p.source, p.line) for p in points}
    for observation in _internal(observations, scanner, Internal.metric_nonfinite):
        key = (observation.hit.source, observation.hit.line)
        if key in sampled:
            continue
        point = parse_metric_line(observation.hit.text, observation.hit.source, observation.hit.line, observation.rank)
        if point is not None:
            points.append(point)
    if any(p.local_only for p in points) and not local_tags_are_global(scans):
        # several nodes: a `[defaultN]:` tag is no global rank; the curves tell nodes apart (curves.curve_of)
        points = [replace(p, rank=None) if p.local_only else p for p in points]
    return points


def _desync(timeouts: list[Observation], candidates: dict[str, Candidate]) -> Desync | None:
    """Ranks that failed waiting in different collectives, when no crash explains their waiting."""
    timed_out = {o.order for o in timeouts}
    if any(is_crash(c, timed_out) for c in candidates.values()) or _SIGNALLED in candidates:
        return None  # a crash or a signal left the ranks wherever they were
    closed = [o for entry_id in _WAITING_CLASSES if entry_id in candidates
              for o in candidates[entry_id].roots if o.order not in timed_out]
    return mismatched_collectives(timeouts, closed)


def _waiting_class_named(candidates: dict[str, Candidate], hang: HangFinding) -> bool:
    """A monitored barrier's report, or (for a hang read from the collective timeouts) gloo's own timeout."""
    waited = [MONITORED_BARRIER] + ([GLOO_TIMEOUT] if hang.observation is not None else [])
    return any((c := candidates.get(i)) is not None and c.score >= THRESHOLD for i in waited)


def _has_crash(candidates: dict[str, Candidate]) -> bool:
    return any(c.score >= THRESHOLD and c.nature is Nature.root and c.entry_id not in NO_PROGRESS
               for c in candidates.values())


def _curve_findings(
    observations: list[Observation], points: list[MetricPoint], candidates: dict[str, Candidate], names: list[str]
) -> list[curves.CurveFinding | None]:
    """NaN onset and divergence become candidates when no crash explains the end. A divergence is one
    when no NaN is: also when the non-finite values were skipped or trained past (a grad norm that went
    inf while the loss, finite, climbed to 1e34)."""
    nonfinite = curves.first_nonfinite(points) or curves.persistent_nonfinite_grad(points)
    findings: list[curves.CurveFinding | None] = [nonfinite]
    nan_stays = False
    if nonfinite is not None:
        at_point = _observation_at(observations, nonfinite.point, names)
        nan_stays = not curves.recovered_after(points, nonfinite.point) \
            and not curves.skipped_by_guard(points, nonfinite.point, at_point.hit.after)
        if nan_stays:
            _add_finding(candidates, "loss-nan", NAN_STAYS_SCORE, at_point, nonfinite.detail)
        elif "loss-nan" in candidates and _trained_past(candidates["loss-nan"], points):
            del candidates["loss-nan"]
    spiked = curves.spikes(points)
    findings.extend(spiked)
    findings.extend(curves.grad_norm_explosions(points))
    findings.extend(curves.throughput_drops(points))
    divergence = curves.diverged(points, spiked)
    findings.append(divergence)
    if divergence is not None and not nan_stays:
        _add_finding(candidates, "loss-spike-divergence", 0.6, _observation_at(observations, divergence.point, names),
                     divergence.detail)
    return findings


def _trained_past(candidate: Candidate, points: list[MetricPoint]) -> bool:
    """Every line a loss-nan signature matched (`loss=inf` in a progress bar, a logged skipped step) is
    followed by finite losses on its curve to the end of the log: the trainer skipped the step and went
    on, as dynamic loss scaling and skip-on-non-finite guards do."""
    at = {(p.source, p.line): p for p in points}
    for observation in candidate.roots:
        point = at.get((observation.hit.source, observation.hit.line))
        if point is None or not (curves.recovered_after(points, point)
                                 or curves.skipped_by_guard(points, point, observation.hit.after)):
            return False
    return True


def resolve(ranked: list[Candidate], kb: KnowledgeBase) -> tuple[Candidate | None, list[tuple[Candidate, str]]]:
    """Pick the root cause; what it explains, and collateral-natured classes, become collateral."""
    if not ranked:
        return None, []
    natured_root = [c for c in ranked if c.nature is Nature.root]
    consequences = [c for c in ranked if c.nature is Nature.collateral]
    root = (natured_root or consequences or ranked)[0]
    if not natured_root and root.entry_id in _VICTIM_CLASSES:
        root = _death_before(root, consequences) or root
    root = _cause_of(root, ranked, kb)
    explains = _explained_by(root, kb)
    collateral: list[tuple[Candidate, str]] = []
    for candidate in ranked:
        if candidate is root:
            continue
        if candidate.nature is not Nature.root or candidate.entry_id in explains:
            collateral.append((candidate, root.entry_id))
    return root, collateral


def _death_before(victim: Candidate, consequences: list[Candidate]) -> Candidate | None:
    """A process death reported (not a stop signal sent to it) above the first of the victims' lost
    connections or timeouts in the same file: the peer whose death they waited on (Ray's raylet reports a
    killed worker before the survivors' Gloo reads fail)."""
    first = min(victim.roots, key=position, default=None)
    if first is None:
        return None
    return next((c for c in consequences if c.entry_id not in _VICTIM_CLASSES and c.entry_id not in LAUNCHER_WRAPPERS
                 and any(_earlier_in_same_log(o, first) and not _COLLATERAL_SIGNAL.search(o.hit.text)
                         for o in c.roots)), None)


def _cause_of(chosen: Candidate, ranked: list[Candidate], kb: KnowledgeBase) -> Candidate:
    """Walk up `explains`: a near-equal candidate that explains the choice is its cause
    (an Xid 79 explains the `unspecified launch failure` printed before it)."""
    visited = {chosen.entry_id}
    while True:
        causes = [c for c in ranked if c.entry_id not in visited and chosen.entry_id in _explained_by(c, kb)
                  and c.score >= chosen.score - EXPLAINS_MARGIN]
        if not causes:
            return chosen
        chosen = causes[0]
        visited.add(chosen.entry_id)


def _explained_by(root: Candidate, kb: KnowledgeBase) -> set[str]:
    entry: Entry | None = kb.get(root.entry_id)
    return set(entry.explains) if entry else set()


def _reports(observations: list[Observation], scanner: Scanner, listed: set[int]) -> list[FailureReport]:
    """torchrun's Root Cause reports, earliest first; `listed`: every rank its report lines name."""
    reports = []
    headers = _internal(observations, scanner, Internal.root_cause_report)
    for observation in headers:
        report = parse_root_cause(observation.hit.after)
        if report is not None:
            reports.append(report)
    if headers and len(listed) == 1 and not any(r.rank is not None for r in reports):
        # A report whose fields are not where the parser looks (a paste in reverse order) that lists one rank
        reports.append(FailureReport(rank=next(iter(listed)), local_rank=None, host=None, exitcode=None, time=None,
                                     error_file=None, traceback=None, has_error_file=False))
    # Several nodes' agents each report their own first failure: the earliest comes first.
    return sorted(reports, key=lambda r: (r.time is None, r.time or datetime.min.replace(tzinfo=timezone.utc)))


def _initiating(root: Candidate | None, suspects: list[SuspectRank]) -> int | None:
    """The best-supported suspect; None when no line of the log names a rank."""
    if root is None or not suspects:
        return None
    return suspects[0].rank


def _unexplained_initiator(suspects: list[SuspectRank], salient: list[Observation],
                           named: SuspectRank | None) -> int | None:
    """For a failure no class explains: a rank its peers name as the one that failed (they
    print their own errors only because of it), else the first rank whose own failure lines
    show it, else the best suspect (a rank that died by a signal, torchrun's report). The
    launcher's lines are not a rank's own: the only rank on them may be a node's tag (`1: E1207 ...
    failed (exitcode: 1) local_rank: 1` under `srun --label`)."""
    if named is not None:
        return named.rank
    first = earliest_rank([o for o in salient if not launcher_line(o)])
    if first is not None:
        return first.rank
    return suspects[0].rank if suspects else None


def _root_traceback(root: Candidate | None) -> Traceback | None:
    """The traceback the root's first line ends; none for a field of torchrun's failure report (`exitcode : -9`),
    which follows the launcher's own ChildFailedError traceback but is no exception."""
    if root is None:
        return None
    first = root.first
    if first is None or not first.hit.before or is_report_field(first.message):
        return None
    return traceback_before(first)


def _confidence(rivals: list[Candidate], ranked: list[Candidate]) -> dict[str, float]:
    """A clear single class near 0.95; real rivals pull it down, explained collateral does not."""
    if not rivals:
        return {}
    top = rivals[0].score
    second = rivals[1].score if len(rivals) > 1 else 0.0
    margin = max(0.0, top - second)
    top_confidence = min(0.99, top * (0.72 + 0.28 * min(1.0, margin / 0.3)))
    scale = top_confidence / top if top > 0 else 0.0
    return {c.entry_id: round(min(0.99, c.score * scale), 2) for c in ranked}


def _peer_raised(root: Candidate, ranked: list[Candidate], observations: list[Observation], scanner: Scanner,
                 excused: set[int]) -> bool:
    """A rank that is none of the victims' raised an exception no candidate matched; when the victims'
    lines name no rank (a formatter that prints it only on the header of its traceback), an exception
    no candidate matched printed in the same file before the first of them (for the classes of ranks that
    waited on a peer: a lost connection or a collective timeout)."""
    victims = {o.rank for o in root.roots}
    if not victims:
        return False
    if None in victims:
        first = min(root.roots, key=lambda o: o.hit.line)
        return root.entry_id in _WAITS_FOR_A_RAISER and _raised_before(first, ranked, observations, scanner, excused)
    return _raised_on(lambda rank: rank not in victims, ranked, observations, scanner, excused)


def _matched(ranked: list[Candidate]) -> set[int]:
    """The orders of the lines some candidate's signature matched (root or supporting)."""
    return {o.order for c in ranked for o in c.roots + c.supporting}


def _raised_before(first: Observation, ranked: list[Candidate], observations: list[Observation], scanner: Scanner,
                   excused: set[int]) -> bool:
    """An exception no class's signature matched (the catch-all for script errors is none, nor is a
    launcher's wrapper of a child's error), earlier in the victim's file than its first report."""
    matched = _matched(ranked)
    return any(_earlier_in_same_log(o, first) and o.order not in matched
               and o.order not in excused and not _WRAPPER_RAISE.search(o.hit.text) and not _SOURCE_RAISE.match(o.message)
               and all(scanner.table[p].kind is not PatternKind.signature or scanner.table[p].entry_id == USER_CODE
                       for p in o.hit.patterns)
               for o in _internal(observations, scanner, Internal.exception))


def _barrier_missed_a_crash(
    root: Candidate, collateral: list[tuple[Candidate, str]], ranked: list[Candidate], missing: set[int],
    kb: KnowledgeBase, observations: list[Observation], scanner: Scanner, excused: set[int], timed_out: set[int],
) -> tuple[Candidate | None, list[tuple[Candidate, str]], set[int]]:
    """A rank the monitored barrier missed that crashed (its own error is in the log; under
    TORCH_DISTRIBUTED_DEBUG=DETAIL rank 0 reports any crashed rank so) failed first: its class is the
    root and the barrier's report collateral; an exception no class knows makes the failure unknown."""
    barrier = next((c for c in ranked if c.entry_id == MONITORED_BARRIER), None)
    if root is barrier:
        crash = _crash_on(missing, ranked, kb, timed_out)
        if crash is None:
            if _raised_on(missing.__contains__, ranked, observations, scanner, excused):
                return None, [], excused | {o.order for o in root.roots}
            return root, collateral, excused
        resolved, collateral = resolve([crash] + [c for c in ranked if c is not crash], kb)
        root = resolved or crash
    if barrier is not None and any(o.rank in missing for o in root.roots):
        collateral = [(barrier, root.entry_id)] + [pair for pair in collateral if pair[0] is not barrier]
    return root, collateral, excused


def _crash_on(ranks: set[int], ranked: list[Candidate], kb: KnowledgeBase, timed_out: set[int]) -> Candidate | None:
    """The best class of a crash seen on one of `ranks`: root-natured, from a line that is no collective
    timeout, and neither a wait, a stall nor a finding about waiting (a desync)."""
    return next((c for c in ranked if c.nature is Nature.root and c.entry_id not in _VICTIM_CLASSES
                 and c.entry_id not in {MONITORED_BARRIER, DESYNC, *NO_PROGRESS} and not _is_stall(kb.get(c.entry_id))
                 and any(o.rank in ranks and o.order not in timed_out for o in c.roots)), None)


def _raised_on(on: Callable[[int], bool], ranked: list[Candidate], observations: list[Observation], scanner: Scanner,
               excused: set[int]) -> bool:
    """A rank `on` accepts raised an exception no candidate matched."""
    matched = _matched(ranked)
    return any(o.rank is not None and on(o.rank) and o.order not in matched and o.order not in excused
               for o in _internal(observations, scanner, Internal.exception))


def _silent_peer(root: Candidate | None, ranked: list[Candidate], observations: list[Observation], scanner: Scanner,
                 seen: set[int]) -> int | None:
    """The one rank besides the victims of a closed connection that printed no error at all: it left
    without one (returned early from the loop on uneven data, `os._exit`), so the lost connection
    is not the cause and the unknown failure started there."""
    if root is None or root.entry_id != "gloo-connection-closed":
        return None
    victims = {o.rank for o in root.roots}
    peers = seen - victims
    if not victims or None in victims or len(peers) != 1:
        return None
    peer = next(iter(peers))
    failing = {o.order for c in ranked if c.entry_id not in LAUNCHER_WRAPPERS for o in c.roots} | {
        o.order for o in _internal(observations, scanner, Internal.exception) if not _WRAPPER_RAISE.search(o.hit.text)}
    return None if any(o.rank == peer and o.order in failing for o in observations) else peer


def _peer_signalled(root: Candidate, reports: list[FailureReport]) -> bool:
    """The victims waited for a peer (lost connections, timeouts) and torchrun reports a rank that is
    none of them killed by a signal it was not sent to stop (SIGXCPU at a CPU-time limit, say; the
    SIGTERM the agent sends the others is not one), or exiting with an error status of its own
    (`sys.exit(3)` with nothing printed)."""
    if root.entry_id not in _VICTIM_CLASSES:
        return False  # a class of its own about a death (worker-killed-by-signal) already names it
    victims = {o.rank for o in root.roots if o.rank is not None}  # torchrun's report repeats a victim's error rankless
    if not victims:
        return False
    return any(report.rank is not None and report.rank not in victims and report.exitcode is not None
               and (report.exitcode > 0 or -report.exitcode not in _STOP_SIGNALS) for report in reports)
