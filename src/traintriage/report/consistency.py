"""Rules that keep a report consistent with itself and with the log.

Each rule is a small function over the parts of the Diagnosis, applied by build.py:
the initiating rank is never collateral; a line appears once in the timeline; collateral is
named after the backend the log uses; a rank the launcher only knows by its local rank is
mapped to the global rank or not used; a victim is not named as first failed when the
initiator is not in the log; identical failures on every rank single no rank out; a
launcher's "Root Cause" that names a victim is overridden out loud.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from traintriage.analyze.facts import RunFacts
from traintriage.analyze.ranks import SuspectRank
from traintriage.kb.schema import Entry
from traintriage.report.model import Collateral, TimelineEvent

VICTIM_REASONS = ("first ", "the only rank with ")
"""Suspect reasons that come from the root cause's own lines (not from a peer or launcher)."""
LAUNCHER_REASON = "torchrun's first observed failure"
WAITING_CLASSES = frozenset({"nccl-watchdog-timeout", "nccl-remote-error", "gloo-connection-closed",
                             "gloo-collective-timeout", "store-connection-lost", "rendezvous-closed",
                             "horovod-shut-down", "jax-distributed-task-died", "mpi-tcp-peer-lost"})
"""Classes whose lines a rank prints while waiting for a peer: the rank printing them is a victim."""
LOCAL_RANK_REASON = "torchrun agent saw local_rank"
STALL_TAGS = frozenset({"hang", "stall", "deadlock", "no-progress"})
"""Tags of classes in which the run stopped making progress rather than failing at a step."""


@dataclass
class RankVerdict:
    initiating: int | None
    failed: list[int]
    notes: list[str] = field(default_factory=list)


def is_stall(entry: Entry) -> bool:
    """A hang or a collective/data timeout: the last step logged is the last one that finished,
    so the report says the run stopped making progress after it, not that it failed at it."""
    return bool(STALL_TAGS & set(entry.tags)) or (entry.category.value == "distributed" and entry.id.endswith("-timeout"))


def without_initiator(collateral: list[Collateral], initiating: int | None) -> list[Collateral]:
    """The initiating rank's own wrapper lines (its ChildFailedError) stay in the list, without
    claiming that rank as collateral of itself."""
    if initiating is None:
        return collateral
    for item in collateral:
        item.ranks = [r for r in item.ranks if r != initiating]
    return collateral


def unique_rows(events: list[TimelineEvent]) -> list[TimelineEvent]:
    """One row per log line: the first class that claims it (root before collateral) keeps it."""
    seen: set[tuple[str, int]] = set()
    unique = []
    for event in events:
        key = (event.source, event.line)
        if key not in seen:
            seen.add(key)
            unique.append(event)
    return unique


def named_for_backend(collateral: list[Collateral], facts: RunFacts, initiating: int | None) -> tuple[
        list[Collateral], list[str]]:
    """On a run whose collectives are not NCCL's, an NCCL-named class is not what happened:
    its lines are that backend's collective errors. The item leaves the list (its ranks stay
    collateral) and a note says what the peers reported."""
    if facts.backend in (None, "nccl", "rccl"):
        return collateral, []
    kept, notes = [], []
    for item in collateral:
        if not item.id.startswith("nccl"):
            kept.append(item)
            continue
        who = f"Ranks {', '.join(map(str, item.ranks))}" if len(item.ranks) > 1 else \
            f"Rank {item.ranks[0]}" if item.ranks else "The other ranks"
        cause = f"rank {initiating}" if initiating is not None else "the failing rank"
        notes.append(f"{who} then failed in {facts.backend} collectives while waiting for {cause} "
                     f"({item.count or len(item.ranks)} lines): collateral, not a cause.")
    return kept, notes


def local_rank_mapped(suspects: list[SuspectRank], facts: RunFacts, report_ranks: dict[int, int]) -> list[SuspectRank]:
    """torchrun's agent names a worker by its local rank; that is the global rank only on one
    node. When the log shows several nodes it is mapped through torchrun's failure report
    (rank : R (local_rank: L)) or not used; a log that shows one agent and no node count is
    taken as one node."""
    mapped = []
    for suspect in suspects:
        if suspect.rank is not None and suspect.reason.startswith(LOCAL_RANK_REASON) and facts.single_node is False:
            if suspect.rank not in report_ranks:
                continue
            suspect = SuspectRank(report_ranks[suspect.rank], suspect.host,
                                  suspect.reason + f" (global rank {report_ranks[suspect.rank]})")
        mapped.append(suspect)
    return mapped


def rank_verdict(
    suspects: list[SuspectRank], entry: Entry, facts: RunFacts, failed_ranks: list[int], seen: set[int]
) -> RankVerdict:
    """Who failed first, or why the report names no one."""
    initiating = suspects[0].rank if suspects else None
    if facts.all_ranks_same and len(failed_ranks) > 1 and not (suspects and suspects[0].named_by_peers):
        return RankVerdict(None, sorted(failed_ranks), [
            f"Every rank ({len(failed_ranks)} of {facts.world_size or len(failed_ranks)}) failed with the same "
            "error at the same frame: this is a problem of the code or the environment, not of one node, "
            "so no rank is singled out."])
    if initiating is not None and entry.id in WAITING_CLASSES and suspects[0].reason.startswith(VICTIM_REASONS):
        # torchrun's report and its agent only say which process exited first: a victim too
        pointed = next((s for s in suspects[1:]
                        if not s.reason.startswith((*VICTIM_REASONS, LAUNCHER_REASON, LOCAL_RANK_REASON))), None)
        if pointed is not None and pointed.rank is not None:  # peers name it, or it is the one that went silent
            return RankVerdict(pointed.rank, [pointed.rank])
        what = entry.id
        if len(seen | set(failed_ranks)) <= 1:
            return RankVerdict(None, [], [
                f"The rank that started the failure is not in this log: rank {initiating} only reports "
                f"{what}, an error a rank prints while waiting for a peer. Collect the other ranks' logs "
                "(every node's output, or torchrun's per-rank log files) and diagnose them together."])
        everyone = seen | set(failed_ranks)
        if facts.world_size and len(everyone) >= facts.world_size:
            return RankVerdict(None, [], [
                f"All {len(everyone)} ranks in this log fail while waiting for a peer ({what}) and none shows an "
                "error of its own, so no rank is named as the first failure: the cause is outside these lines "
                "(a rank or node whose output is not here, work one rank did outside the collective, or the "
                "network between the ranks); collect every node's output and diagnose it together."])
        return RankVerdict(None, [], [
            f"No rank in this log shows an error of its own before {what}: the ranks here are waiting for "
            f"one that stopped, and the earliest of them (rank {initiating}) is not the cause. Look for a rank "
            "missing from this log or one that stopped logging first, and collect its output."])
    notes = []
    launcher = next((s for s in suspects if s.reason.startswith(LAUNCHER_REASON)), None)
    if launcher is not None and initiating is not None and launcher.rank != initiating:
        notes.append(f"torchrun's \"Root Cause (first observed failure)\" names rank {launcher.rank}, the first "
                     f"process it saw exit, but rank {initiating} failed first ({suspects[0].reason}); "
                     f"rank {launcher.rank} is collateral.")
    return RankVerdict(initiating, [initiating] if initiating is not None else failed_ranks, notes)

