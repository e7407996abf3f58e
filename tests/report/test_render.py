"""Rendered output exactly as a user sees it (snapshot of a hand-built Diagnosis)."""

from __future__ import annotations

from traintriage.report.model import (
    Candidate,
    Collateral,
    Diagnosis,
    Evidence,
    FixAdvice,
    Ranks,
    RootCause,
    Stats,
    Status,
)
from traintriage.report.render import rank_ranges, render_markdown, render_text


def _diagnosis() -> Diagnosis:
    return Diagnosis(
        status=Status.failure,
        root_cause=RootCause(
            id="cuda-oom", title="CUDA out of memory", category="memory", severity="high", confidence=0.94,
            summary="The allocator could not satisfy a request.",
            evidence=[Evidence(source="job.out", line=8812, rank=3, host="node7", time="2024-05-01T10:02:11.123000Z",
                               text="[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB")],
        ),
        initiating_rank=3,
        ranks=Ranks(seen=list(range(8)), failed=[3], collateral=[0, 1, 2, 4, 5, 6, 7]),
        collateral=[Collateral(id="nccl-watchdog-timeout", title="NCCL collective timed out (watchdog)",
                               ranks=[0, 1, 2, 4, 5, 6, 7], explained_by="cuda-oom", count=7)],
        fix=FixAdvice(summary="Reduce peak memory.", steps=["Halve the micro-batch."]),
        verify="Run one step with the new settings and watch torch.cuda.max_memory_allocated().",
        stats=Stats(sources=1, lines=9000, bytes=1000, seconds=0.1),
    )


def test_text_snapshot() -> None:
    assert render_text(_diagnosis()) == (
        "Root cause   cuda-oom — CUDA out of memory    confidence 0.94\n"
        "First failed rank 3 (node7, 2024-05-01 10:02:11.123000)\n"
        "Evidence     job.out:8812  [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB\n"
        "Collateral   ranks 0-2,4-7  NCCL collective timed out (watchdog) — caused by the failure on rank 3\n"
        "Summary      The allocator could not satisfy a request.\n"
        "Fix          Reduce peak memory.\n"
        "             1. Halve the micro-batch.\n"
        "Verify       Run one step with the new settings and watch torch.cuda.max_memory_allocated().\n"
    )


def test_markdown_names_cause_rank_and_collateral() -> None:
    text = render_markdown(_diagnosis())
    assert text.startswith("## traintriage: `cuda-oom` — CUDA out of memory")
    assert "**First failed:** rank 3" in text
    assert "- `nccl-watchdog-timeout` on ranks 0-2,4-7, explained by `cuda-oom`" in text


def test_rank_ranges() -> None:
    assert rank_ranges([7, 0, 1, 2, 4, 5]) == "0-2,4-5,7"
    assert rank_ranges([3]) == "3"
    assert rank_ranges([]) == ""


def test_an_unknown_failure_shows_who_failed_first_and_where_to_look() -> None:
    """No class explains it, but the engine knows the rank whose output shows the failure and which
    classes the log partly matches: the terminal and Markdown reports say both, as the web page does."""
    diagnosis = Diagnosis(
        status=Status.unknown_failure,
        unknown=[Evidence(source="job.out", line=41, rank=2, text="[rank2]: RuntimeError: CUDA error: invalid argument")],
        candidates=[Candidate(id="nccl-unhandled-cuda-error", confidence=0.14), Candidate(id="device-mismatch", confidence=0.05)],
        initiating_rank=2,
        stats=Stats(sources=1, lines=41, bytes=1000, seconds=0.1),
    )
    assert render_text(diagnosis).splitlines()[:4] == [
        "Status       the run failed, but no known failure class explains it",
        "First failed rank 2",
        "Salient      job.out:41  [rank2]: RuntimeError: CUDA error: invalid argument",
        "Candidates   nccl-unhandled-cuda-error 0.14, device-mismatch 0.05  (classes the log partly matches, below the "
        "confidence needed to name one)",
    ]
    markdown = render_markdown(diagnosis)
    assert "**First failed:** rank 2" in markdown
    assert "**Candidates:** `nccl-unhandled-cuda-error` 0.14, `device-mismatch` 0.05" in markdown
