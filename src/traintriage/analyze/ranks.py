"""Which rank started the cascade, and a short ranked list of suspects with reasons.

Evidence, strongest first: the root cause's own lines ordered by time (or by line
order inside one source when the lines carry no time); a rank that died by a signal;
torchrun's `Root Cause (first observed failure)` report (its node only, and its time
may be the agent's detection time); NCCL watchdog sequence numbers (the rank that
never reached the collective lags the others).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from traintriage.analyze.observations import Observation, printed_time, traceback_before
from traintriage.analyze.scoring import Candidate
from traintriage.match.internal import HOROVOD_TENSOR
from traintriage.parse.prefix import failed_process_rank
from traintriage.parse.torchrun import FailureReport, is_report_field
from traintriage.parse.traceback import TRACEBACK_HEADER

# Applied to a hit's text (at most MAX_TEXT bytes). Each rank is digits then a separator
# that is not optional, so a run of digits splits into ranks one way only (no backtracking).
_FAILED_BARRIER = re.compile(r"Ranks? (\d{1,7}(?:, ?\d{1,7})*),? failed to pass monitoredBarrier")
# ProcessGroupNCCL's ranks that could not fetch rank 0's ncclUniqueId from the store end with
# `This may indicate a possible application crash on rank 0 or a network set up issue.`
_FAULTY = re.compile(r"(?:check rank (\d+) logs for faulty rank|waiting for send/recv from rank (\d+)|"
                     r"Culprit rank (\d+); Error type|possible application crash on rank (\d+))")
# torch.distributed.checkpoint gathers every rank's exception and raises them on all ranks as one
# `CheckpointException ranks:dict_keys([3])` (checkpoint/api.py): the keys are the ranks that failed.
_DCP_FAILED = re.compile(r"CheckpointException ranks:dict_keys\(\[(\d{1,7}(?:, \d{1,7})*)\]\)")
# Ray Train's controller quotes each failed worker's error under `[Rank N Error Snippet]:` (N its world rank;
# Ray names workers by actor and pid, not by a rank tag on their lines).
_RAY_FAILED_WORKER = re.compile(r"\[Rank (\d{1,7}) Error Snippet\]:")
# JAX's coordination service names the task (the process index, jax.process_index()) that stopped sending
# heartbeats: `Task 1 heartbeat timeout` (current), `/job:jax_worker/replica:0/task:1 has been set to ERROR`.
_JAX_FAILED_TASK = re.compile(r"Task (\d{1,7}) heartbeat timeout|/job:jax_worker/replica:\d{1,4}/task:(\d{1,7}) "
                              r"(?:has been set to ERROR|heartbeat timeout)")
# TORCH_DISTRIBUTED_DEBUG=DETAIL's check of each collective: every rank that compares itself with one that
# disagrees prints `Detected mismatch between collectives on ranks. Rank A is running collective: <fingerprint>,
# but Rank B is running collective: <fingerprint>` (ProcessGroupWrapper.cpp).
# DDP's check of the model at construction (reducer.cpp verify_params_across_processes) has the same shape:
# `DDP expects same model across all ranks, but Rank A has N params, while rank B has inconsistent M params.`
_MISMATCH_RANK = re.compile(r"Rank (\d{1,7}) is running collective: |[Rr]ank (\d{1,7}) has (?:inconsistent )?\d{1,9} params")
# Horovod's coordinator names the ranks that never submitted a tensor: `<tensor> [missing ranks: 1]`
# (0.16 and older), or under `Missing ranks:` one line per rank, `1!: [HorovodAllreduce_x, ...]`
# (stall_inspector.cc; a tensor's name holds Horovod's default, match/internal.py's
# HOROVOD_TENSOR, often under a scope such as `DistributedGradientTape_Allreduce/...`, unless
# the user names it).
_HOROVOD_MISSING = re.compile(r"\[missing ranks: (\d{1,7})\]|(?:^|[\]>: ])(\d{1,7})!?: \[[^\]\n]{0,300}?" + HOROVOD_TENSOR)
# Horovod 0.13.5 and older listed the ranks that did submit instead: `<tensor> [ready ranks: 5, 6, 3, 1, 4, 0]`.
_HOROVOD_READY = re.compile(r"\[ready ranks: (\d{1,7}(?:, \d{1,7}){0,4095})\]")
_AGENT_FAILURE = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")
_REPORT_RANK = re.compile(r"rank\s*: (\d+) \(local_rank")
_LAST_COMPLETED = re.compile(r"last completed (?:NCCL )?work: (-?\d+)")
_SEQ = re.compile(r"SeqNum=(\d+)")


@dataclass(frozen=True)
class SuspectRank:
    rank: int | None
    host: str | None
    reason: str
    named_by_peers: bool = False
    """The other ranks' own lines single this one out (it did not arrive, it disagrees)."""


def earliest_rank(observations: list[Observation]) -> Observation | None:
    ranked = [o for o in observations if o.rank is not None]
    if not ranked:
        return None
    timed = [o for o in ranked if o.time is not None]
    if timed:
        return min(timed, key=lambda o: o.sort_key)
    sources = {o.hit.source for o in ranked}
    if len(sources) == 1:
        return min(ranked, key=lambda o: o.hit.line)
    return None


def barrier_missing_ranks(faulty: list[Observation]) -> set[int]:
    """Every rank monitored_barrier's coordinator names as never arrived (`Ranks 1, 3 failed to pass`)."""
    missing: set[int] = set()
    for observation in faulty:
        match = _FAILED_BARRIER.search(observation.hit.text)
        if match:
            missing.update(int(rank) for rank in re.findall(r"\d+", match.group(1)))
    return missing


def named_faulty_rank(faulty: list[Observation]) -> SuspectRank | None:
    """A rank named as faulty: monitored_barrier's coordinator names the ranks that never
    arrived (`Ranks 1, 3 failed to pass monitoredBarrier`), which outranks the peers' pointer
    to the coordinator (`Please check rank 0 logs for faulty rank`); a distributed checkpoint
    names the one rank whose save or load failed, Ray Train the one worker that failed, and JAX's
    coordination service the one task that stopped sending heartbeats."""
    for observation in faulty:
        match = _FAILED_BARRIER.search(observation.hit.text)
        if match:
            first = int(re.findall(r"\d+", match.group(1))[0])
            return SuspectRank(first, None, f"failed to pass monitored_barrier ({match.group(0).strip()})", True)
    failed_saves = {int(rank) for o in faulty for m in _DCP_FAILED.finditer(o.hit.text)
                    for rank in m.group(1).split(",")}
    if len(failed_saves) == 1:
        rank = failed_saves.pop()
        return SuspectRank(rank, None, "the only rank torch.distributed.checkpoint reports as failed", True)
    failed_workers = {int(m.group(1)) for o in faulty for m in _RAY_FAILED_WORKER.finditer(o.hit.text)}
    if len(failed_workers) == 1:
        rank = failed_workers.pop()
        return SuspectRank(rank, None, "the only worker Ray Train reports as failed", True)
    failed_tasks = {int(m.group(1) or m.group(2)) for o in faulty for m in _JAX_FAILED_TASK.finditer(o.hit.text)}
    if len(failed_tasks) == 1:
        task = failed_tasks.pop()
        return SuspectRank(task, None, "the only JAX task the coordination service reports as failed", True)
    named: dict[int, int] = defaultdict(int)
    for observation in faulty:
        match = _FAULTY.search(observation.hit.text)
        if match:
            named[int(next(g for g in match.groups() if g is not None))] += 1
    if named:
        rank = max(named, key=lambda r: named[r])
        return SuspectRank(rank, None, f"named as the faulty rank by its peers ({named[rank]} lines)", True)
    return _horovod_missing_rank(faulty) or _odd_collective_rank(faulty)


def _odd_collective_rank(faulty: list[Observation]) -> SuspectRank | None:
    """The one rank every rank's collective-mismatch (or DDP model-mismatch) report names: the others
    agree with each other and each compares itself with it. With two ranks both are in every report, so none is named."""
    reports = [{int(a or b) for a, b in _MISMATCH_RANK.findall(o.hit.text[:8192])} for o in faulty]
    reports = [named for named in reports if len(named) == 2]
    if len(reports) < 2:
        return None
    in_all = set.intersection(*reports)
    if len(in_all) != 1:
        return None
    rank = in_all.pop()
    return SuspectRank(rank, None, f"the rank each of {len(reports)} collective-mismatch reports compares with", True)


def _horovod_missing_rank(faulty: list[Observation]) -> SuspectRank | None:
    """The one rank Horovod's stall report says never submitted. When several are missing, the
    odd one out is usually the rank that did submit (it alone ran validation, say), so no rank
    is named from the report."""
    missing = {int(next(g for g in m.groups() if g is not None))
               for o in faulty for m in _HOROVOD_MISSING.finditer(o.hit.text)}
    reason = "the only rank Horovod's stall report lists as missing"
    if not missing:
        missing = _missing_from_ready(faulty)
        reason = "the only rank absent from the ready ranks of Horovod's stalled tensors"
    if len(missing) != 1:
        return None
    rank = missing.pop()
    return SuspectRank(rank, None, reason, True)


def _missing_from_ready(faulty: list[Observation]) -> set[int]:
    """The ranks below the highest ready rank that some stalled tensor's ready list lacks. A
    missing rank above every ready one cannot be told from the world size, so it is not named."""
    ready = [{int(r) for r in m.group(1).split(", ")} for o in faulty for m in _HOROVOD_READY.finditer(o.hit.text)]
    if not ready:
        return set()
    top = max(max(r) for r in ready)
    if top > 65535:
        return set()
    return {rank for r in ready for rank in range(top + 1) if rank not in r}


def agent_first_failure(agent_lines: list[Observation]) -> SuspectRank | None:
    """torchrun's agent logs `failed (exitcode: N) local_rank: K` for the first worker it saw
    fail; on one node the local rank is the global rank."""
    for observation in sorted(agent_lines, key=lambda o: (o.hit.source, o.hit.line)):
        match = _AGENT_FAILURE.search(observation.hit.text)
        if match:
            return SuspectRank(int(match.group(2)), observation.host,
                               f"torchrun agent saw local_rank {match.group(2)} fail first (exitcode {match.group(1)})")
    return None


def launcher_reported_death(observations: list[Observation]) -> SuspectRank | None:
    """The first process a launcher or process pool reports dead, by its rank: mpirun's
    `process rank N`, srun's `task N:`, vLLM's `VllmWorker-N died`, TGI's `Shard N failed`."""
    for observation in sorted(observations, key=lambda o: (o.hit.source, o.hit.line)):
        rank = failed_process_rank(observation.message)
        if rank is not None:
            return SuspectRank(rank, observation.host, f"reported dead by its launcher ({observation.message[:80]})")
    return None


def report_ranks(report_lines: list[Observation]) -> set[int]:
    """Every rank torchrun's failure report lists (its Failures and its Root Cause)."""
    ranks = set()
    for observation in report_lines:
        match = _REPORT_RANK.search(observation.hit.text)
        if match:
            ranks.add(int(match.group(1)))
    return ranks


def watchdog_laggard(watchdog: list[Observation], seen: set[int], members: set[int] | frozenset[int] = frozenset()
                     ) -> SuspectRank | None:
    """The rank whose collectives stopped first, from watchdog sequence numbers, or the one seen
    rank that did not report the timeout. A lone report singles out a silent peer only when that
    peer is surely one of the job's ranks (it logged training progress, or torchrun's report lists
    it): a rank seen on a stray line may belong to another numbering (a Slurm task label)."""
    completed: dict[int, int] = {}
    reporting: set[int] = set()
    for observation in watchdog:
        if observation.rank is None:
            continue
        reporting.add(observation.rank)
        match = _LAST_COMPLETED.search(observation.hit.text)
        if match:
            value = int(match.group(1))
            completed[observation.rank] = min(completed.get(observation.rank, value), value)
    if len(completed) >= 2 and len(set(completed.values())) > 1:
        laggard = min(completed, key=lambda r: completed[r])
        return SuspectRank(laggard, None, f"last completed collective {completed[laggard]}, behind its peers")
    silent = sorted(seen - reporting)
    if reporting and len(silent) == 1 and (len(reporting) >= 2 or silent[0] in members):
        return SuspectRank(silent[0], None, "the only rank that did not report the collective timeout")
    return None


def missing_reporter(watchdog: list[Observation], observations: list[Observation]) -> SuspectRank | None:
    """Ranks count from 0: when every rank up to the highest reporting one reports the collective
    timeout but one that the log never shows, that one never reached the collective. (A rank the
    log shows without a report is watchdog_laggard's; one on a cut last line may have reported.)"""
    reporting = {o.rank for o in watchdog if o.rank is not None}
    if len(reporting) < 2:
        return None
    top = max(reporting)
    shown = {o.rank for o in observations if o.rank is not None and 0 <= o.rank <= top}
    if top + 1 - len(shown) != 1:  # counted, not listed: a rank number may be in the millions
        return None
    missing = next(rank for rank in range(top + 1) if rank not in shown)
    return SuspectRank(missing, None, "the one rank up to the highest reporting one that did not report the "
                                             "collective timeout")


_LAUNCHER_MODULES = ("torch/distributed/elastic/", "torch.distributed.elastic.", "torch/distributed/run.py")
# The file of the outermost frame of a traceback raised in the launcher's own process (torchrun's entry point or
# elastic's modules), not in a worker (a worker's script decorated with @record has elastic's frames too, below its own).
_LAUNCHER_ENTRY = re.compile(r"(?:/bin/torchrun|torch/distributed/(?:run\.py|launch\.py|elastic/))")


def launcher_line(observation: Observation) -> bool:
    """A line torchrun's agent printed: its module path or exception class (ChildFailedError, a rendezvous
    error), a field of its failure report, or the last line of a traceback raised in the agent's own code
    (`torch.distributed.DistNetworkError: Broken pipe` when its store went away). Its only rank tag, if any,
    is an outer one (`1: ` from `srun --label`, `[1,1]` from mpirun): a node's or task's, not a worker's."""
    text = observation.hit.text
    if any(module in text for module in _LAUNCHER_MODULES) or "ChildFailedError" in text \
            or is_report_field(observation.message):
        return True
    traceback = traceback_before(observation)
    return traceback is not None and bool(traceback.frames) and _LAUNCHER_ENTRY.search(traceback.frames[0].file) is not None


def _rank_lines(root: Candidate, reports: list[FailureReport]) -> list[Observation]:
    """The root's lines to read its rank from. The launcher's own lines carry only a node's tag: the workers' own
    lines, when they name a rank; else none when the class was read off torchrun's failure report (the report
    names the global rank itself); else all of them (a class of the launcher's own: the node that got a signal)."""
    own = [o for o in root.roots if not launcher_line(o)]
    if any(o.rank is not None for o in own):
        return own
    if reports and any(is_report_field(o.message) for o in root.roots):
        return []
    return root.roots


def suspects_for(
    root: Candidate | None,
    failed_by_signal: list[Observation],
    reports: list[FailureReport],
    watchdog: list[Observation],
    named: SuspectRank | None,
    agent_lines: list[Observation],
    seen: set[int],
    observations: list[Observation] | None = None,
    members: set[int] | frozenset[int] = frozenset(),
) -> list[SuspectRank]:
    """`named`: the rank the peers' own lines name as faulty (named_faulty_rank), strongest of all."""
    found: list[SuspectRank] = []
    if named is not None:
        found.append(named)
    if root is not None:
        lines = _rank_lines(root, reports)
        first = earliest_rank(lines)
        if first is not None:
            stamp = printed_time(first)
            when = f" at {stamp.isoformat()}" if stamp else ""
            found.append(SuspectRank(first.rank, first.host, f"first {root.entry_id} line{when}"))
        by_rank: dict[int, int] = defaultdict(int)
        for observation in lines:
            if observation.rank is not None:
                by_rank[observation.rank] += 1
        if first is None and len(by_rank) == 1:
            only = next(iter(by_rank))
            found.append(SuspectRank(only, None, f"the only rank with {root.entry_id} lines"))
    for report in reports:
        if report.rank is not None:
            code = f" (exitcode {report.exitcode})" if report.exitcode is not None else ""
            found.append(SuspectRank(report.rank, report.host, f"torchrun's first observed failure{code}"))
    if root is not None and not any(o.rank is not None for o in root.roots):
        # The class's lines name no rank (NCCL's own WARN lines): a lone rank's traceback, after torchrun's report.
        with_traceback = {o.rank for o in observations or [] if o.rank is not None and TRACEBACK_HEADER in o.hit.text}
        if len(with_traceback) == 1:
            found.append(SuspectRank(with_traceback.pop(), None, "the only rank with a traceback"))
    died = launcher_reported_death(observations or [])
    if died is not None:
        found.append(died)
    signalled = earliest_rank(failed_by_signal)
    if signalled is not None:
        found.append(SuspectRank(signalled.rank, signalled.host, "died by a signal"))
    agent = agent_first_failure(agent_lines)
    if agent is not None:
        found.append(agent)
    laggard = watchdog_laggard(watchdog, seen, members) or missing_reporter(watchdog, observations or [])
    if laggard is not None:
        found.append(laggard)
    unique: list[SuspectRank] = []
    for suspect in found:
        if all(s.rank != suspect.rank for s in unique):
            unique.append(suspect)
    return unique[:5]
