"""Renderers: one Diagnosis, three views (terminal text, Markdown for an issue, JSON)."""

from __future__ import annotations

import json

from traintriage.report.model import Collateral, Diagnosis, Evidence, Facts, FixAdvice, RootCause, Status
from traintriage.report.quote import quote

LABEL_WIDTH = 13
TEXT_WIDTH = 160


def rank_ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 4, 5, 7] -> '0-2,4-5,7'."""
    if not ranks:
        return ""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    start = previous = ordered[0]
    for rank in ordered[1:]:
        if rank == previous + 1:
            previous = rank
            continue
        parts.append(f"{start}-{previous}" if previous > start else str(start))
        start = previous = rank
    parts.append(f"{start}-{previous}" if previous > start else str(start))
    return ",".join(parts)


def summary_of(root: RootCause) -> str:
    """The one sentence a report shows, whole (the long summary is for `kb show`)."""
    return root.report_summary or root.summary


def facts_line(facts: Facts | None) -> str | None:
    """`pytorch (torchrun) · gloo · failed at step 5 · bf16 · world size 4` from what the log says."""
    if facts is None:
        return None
    parts = []
    if facts.stack:
        parts.append(" + ".join(facts.stack[:3]) + (f" ({facts.launcher})" if facts.launcher else ""))
    elif facts.launcher:
        parts.append(facts.launcher)
    if facts.zero_stage is not None and "deepspeed" in facts.stack:
        parts.append(f"ZeRO stage {facts.zero_stage}")
    if facts.backend:
        parts.append(facts.backend)
    if facts.phase:
        parts.append(_phase_words(facts))
    parts.extend(value for value in (facts.dtype, facts.platform) if value)
    if facts.world_size:
        parts.append(f"world size {facts.world_size}")
    if facts.all_ranks_same:
        parts.append("all ranks failed the same way")
    versions = [f"{_VERSION_NAMES.get(name, name)} {value}" for name, value in facts.versions.items() if name != "gpu"]
    parts.extend(versions[:4])
    if "gpu" in facts.versions:
        parts.append(facts.versions["gpu"])
    return " · ".join(parts) if parts else None


_VERSION_NAMES = {"cuda": "CUDA", "nccl": "NCCL", "rocm": "ROCm", "deepspeed": "DeepSpeed", "python": "Python"}


_PHASE_WORDS = {"setup": "during setup", "model-load": "loading the model", "first-step": "in the first step",
                "eval": "in evaluation", "checkpoint": "in checkpointing", "shutdown": "at shutdown"}


def _phase_words(facts: Facts) -> str:
    """`failed at step 40`; for a hang or timeout, `stopped making progress after step 40`: the
    step logged last is the last one that finished, not the one that failed."""
    verb = "stopped making progress" if facts.stalled else "failed"
    if facts.phase == "step":
        if facts.step is None:
            return f"{verb} in a training step"
        return f"{verb} after step {facts.step}" if facts.stalled else f"{verb} at step {facts.step}"
    words = _PHASE_WORDS.get(facts.phase or "")
    if words is None:
        return ""
    if facts.stalled and facts.phase == "model-load":
        return "stopped making progress while loading the model"
    return f"{verb} {words}"


def fix_reason(fix: FixAdvice) -> str | None:
    """"Steps 1-2 first because ..." when the facts chose variants."""
    if not fix.chosen or not fix.because:
        return None
    which = "Step 1 comes" if fix.chosen == 1 else f"Steps 1-{fix.chosen} come"
    return f"{which} first because {' and '.join(fix.because)}."


def quote_evidence(evidence: Evidence, width: int = TEXT_WIDTH) -> str:
    """The evidence line in `width` characters, keeping the part its signature matched."""
    keep = (evidence.matched[0], evidence.matched[1]) if evidence.matched and len(evidence.matched) == 2 else None
    return quote(evidence.text, width, keep)


def _where(evidence: Evidence) -> str:
    return f"{evidence.source}:{evidence.line}"


def report_words(diagnosis: Diagnosis) -> dict[str, str | None]:
    """The sentences every view makes of a diagnosis (CLI text and Markdown, the web result
    page): the one-sentence summary, the facts of the run, who failed first, the exception when
    the evidence does not already show it, the user's frame, why these fix steps come first."""
    root = diagnosis.root_cause
    frame = root.user_frame if root is not None else None
    return {"summary": summary_of(root) if root is not None else None,
            "facts": facts_line(diagnosis.facts),
            "first_failed": _first_failed(diagnosis),
            "exception": exception_to_show(root) if root is not None else None,
            "your_code": f"{frame.file}:{frame.line} in {frame.function}" if frame is not None else None,
            "fix_reason": fix_reason(diagnosis.fix) if diagnosis.fix else None}


def exception_to_show(root: RootCause) -> str | None:
    """The root cause's exception, unless an evidence line already quotes it."""
    if not root.exception:
        return None
    shown = " ".join(" ".join(e.text.split()) for e in root.evidence)
    return None if " ".join(root.exception.split()) in shown else root.exception


def _first_failed(diagnosis: Diagnosis) -> str | None:
    if diagnosis.initiating_rank is None:
        return None
    details = []
    for evidence in diagnosis.root_cause.evidence if diagnosis.root_cause else []:
        if evidence.rank == diagnosis.initiating_rank:
            if evidence.host:
                details.append(evidence.host)
            if evidence.time:
                details.append(evidence.time.replace("T", " ").rstrip("Z"))
            break
    suffix = f" ({', '.join(details)})" if details else ""
    return f"rank {diagnosis.initiating_rank}{suffix}"


PARTIAL_MATCHES = "classes the log partly matches, below the confidence needed to name one"


def partial_matches(diagnosis: Diagnosis, code: bool = False) -> str:
    """An unknown failure's best candidates with their confidence: where to look first."""
    tick = "`" if code else ""
    return ", ".join(f"{tick}{c.id}{tick} {c.confidence:.2f}" for c in diagnosis.candidates[:3])


def collateral_cause(diagnosis: Diagnosis, item: Collateral) -> str:
    """Why a collateral class is not a cause, in the words of the terminal report and the editor."""
    if diagnosis.initiating_rank is not None:
        return f"caused by the failure on rank {diagnosis.initiating_rank}"
    return f"consequence of {item.explained_by}"


def fix_markdown(fix: FixAdvice) -> list[str]:
    """The fix chosen for this run as Markdown lines: the Markdown report and the editor's
    hover show the same summary, reason, steps in this run's order, pointer and snippets."""
    out = [fix.summary + "\n"]
    reason = fix_reason(fix)
    if reason:
        out.append(reason + "\n")
    out.extend(f"{n}. {step}" for n, step in enumerate(fix.steps, 1))
    out.append("")
    if fix.more:
        out.append(f"Steps for other situations: `{fix.more}`\n")
    for stack, code in fix.code.items():
        out.append(f"**{stack}**\n\n```\n{code.rstrip()}\n```\n")
    return out


def text_lines(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    """(label, text) rows; the CLI styles them, tests read them plain."""
    rows: list[tuple[str, str]] = []
    if diagnosis.status is Status.no_failure:
        rows.append(("Status", "no failure found"))
    elif diagnosis.status is Status.unknown_failure:
        rows.append(("Status", "the run failed, but no known failure class explains it"))
        first = _first_failed(diagnosis)
        if first:
            rows.append(("First failed", first))
        for evidence in diagnosis.unknown:
            rows.append(("Salient", f"{_where(evidence)}  {quote(evidence.text, TEXT_WIDTH)}"))
        if diagnosis.candidates:
            rows.append(("Candidates", f"{partial_matches(diagnosis)}  ({PARTIAL_MATCHES})"))
        rows.extend(("Note", note) for note in diagnosis.notes)
    root = diagnosis.root_cause
    if root is not None:
        words = report_words(diagnosis)
        rows.append(("Root cause", f"{root.id} — {root.title}    confidence {root.confidence:.2f}"))
        if words["first_failed"]:
            rows.append(("First failed", words["first_failed"]))
        if words["facts"]:
            rows.append(("Run", words["facts"]))
        for evidence in root.evidence:
            rows.append(("Evidence", f"{_where(evidence)}  {quote_evidence(evidence)}"))
        if words["exception"]:
            rows.append(("Exception", quote(words["exception"], TEXT_WIDTH)))
        if words["your_code"]:
            rows.append(("Your code", words["your_code"]))
        for item in diagnosis.collateral:
            ranks = f"ranks {rank_ranges(item.ranks)}  " if item.ranks else ""
            rows.append(("Collateral", f"{ranks}{item.title or item.id} — {collateral_cause(diagnosis, item)}"))
        explained = {c.id for c in diagnosis.collateral}
        rivals = [c for c in diagnosis.candidates[1:] if c.id not in explained][:3]
        if rivals:
            rows.append(("Alternatives", ", ".join(f"{c.id} {c.confidence:.2f}" for c in rivals)))
        rows.append(("Summary", words["summary"] or root.summary))
        for note in diagnosis.notes:
            rows.append(("Note", note))
    for anomaly in diagnosis.anomalies:
        where = f"rank {anomaly.rank} " if anomaly.rank is not None else ""
        rows.append(("Anomaly", f"{anomaly.kind}: {where}{anomaly.detail}"))
    if diagnosis.timeline and len(diagnosis.timeline) > 1:
        for event in diagnosis.timeline:
            when = event.time.replace("T", " ").rstrip("Z") if event.time else f"{event.source}:{event.line}"
            who = f"rank {event.rank}" if event.rank is not None else "-"
            rows.append(("Timeline", f"{when}  {who:>8}  {event.what}"))
    if diagnosis.fix:
        rows.append(("Fix", diagnosis.fix.summary))
        reason = fix_reason(diagnosis.fix)
        if reason:
            rows.append(("", reason))
        for number, step in enumerate(diagnosis.fix.steps, 1):
            rows.append(("", f"{number}. {' '.join(step.split())}"))
        if diagnosis.fix.more:
            rows.append(("", f"Steps for other situations: {diagnosis.fix.more}"))
    if diagnosis.verify:
        rows.append(("Verify", " ".join(diagnosis.verify.split())))
    for warning in diagnosis.warnings:
        rows.append(("Warning", warning))
    return rows


def render_text(diagnosis: Diagnosis) -> str:
    return "\n".join(f"{label:<{LABEL_WIDTH}}{text}" for label, text in text_lines(diagnosis)) + "\n"


def render_json(diagnosis: Diagnosis) -> str:
    return json.dumps(diagnosis.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


def render_markdown(diagnosis: Diagnosis) -> str:
    out: list[str] = []
    root = diagnosis.root_cause
    if root is None:
        title = "No failure found" if diagnosis.status is Status.no_failure else "Unknown failure"
        out.append(f"## traintriage: {title}\n")
        first = _first_failed(diagnosis)
        if first:
            out.append(f"**First failed:** {first}\n")
        for evidence in diagnosis.unknown:
            out.append(f"- `{_where(evidence)}` `{quote(evidence.text, TEXT_WIDTH)}`")
        if diagnosis.candidates:
            out.append(f"\n**Candidates:** {partial_matches(diagnosis, code=True)} ({PARTIAL_MATCHES})")
        out.extend(f"\n> {note}" for note in diagnosis.notes)
        return "\n".join(out) + "\n"
    out.append(f"## traintriage: `{root.id}` — {root.title}\n")
    out.append(f"**Confidence** {root.confidence:.2f} · **severity** {root.severity} · **category** {root.category}\n")
    first = _first_failed(diagnosis)
    if first:
        out.append(f"**First failed:** {first}\n")
    facts = facts_line(diagnosis.facts)
    if facts:
        out.append(f"**Run:** {facts}\n")
    out.append(summary_of(root) + "\n")
    out.extend(f"> {note}\n" for note in diagnosis.notes)
    out.append("### Evidence\n")
    out.append("```")
    out.extend(f"{_where(e)}  {e.text}" for e in root.evidence)
    out.append("```\n")
    if root.user_frame:
        out.append(f"Raised from your code at `{root.user_frame.file}:{root.user_frame.line}` "
                   f"in `{root.user_frame.function}`.\n")
    if diagnosis.collateral:
        out.append("### Collateral (consequences, not causes)\n")
        for item in diagnosis.collateral:
            ranks = f" on ranks {rank_ranges(item.ranks)}" if item.ranks else ""
            out.append(f"- `{item.id}`{ranks}, explained by `{item.explained_by}`")
        out.append("")
    if diagnosis.timeline:
        out.append("### Timeline\n")
        out.append("| when | rank | event |\n|---|---|---|")
        for event in diagnosis.timeline:
            when = event.time or f"{event.source}:{event.line}"
            out.append(f"| {when} | {event.rank if event.rank is not None else '-'} | `{event.what}` |")
        out.append("")
    if diagnosis.anomalies:
        out.append("### Anomalies\n")
        out.extend(f"- {a.kind}: {a.detail}" for a in diagnosis.anomalies)
        out.append("")
    if diagnosis.fix:
        out.append("### Fix\n")
        out.extend(fix_markdown(diagnosis.fix))
    if diagnosis.verify:
        out.append(f"### Verify\n\n{diagnosis.verify}\n")
    if diagnosis.environment:
        out.append("### Environment\n")
        out.extend(f"- {k}: {v}" for k, v in diagnosis.environment.items())
    return "\n".join(out) + "\n"
