"""Renderers: one Diagnosis, three views (terminal text, Markdown for an issue, JSON)."""

from __future__ import annotations

import json

from traintriage.report.model import Diagnosis, Evidence, Status

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


def _clip(text: str, width: int = TEXT_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _where(evidence: Evidence) -> str:
    return f"{evidence.source}:{evidence.line}"


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


def text_lines(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    """(label, text) rows; the CLI styles them, tests read them plain."""
    rows: list[tuple[str, str]] = []
    if diagnosis.status is Status.no_failure:
        rows.append(("Status", "no failure found"))
    elif diagnosis.status is Status.unknown_failure:
        rows.append(("Status", "the run failed, but no known failure class explains it"))
        for evidence in diagnosis.unknown:
            rows.append(("Salient", f"{_where(evidence)}  {_clip(evidence.text)}"))
    root = diagnosis.root_cause
    if root is not None:
        rows.append(("Root cause", f"{root.id} — {root.title}    confidence {root.confidence:.2f}"))
        first = _first_failed(diagnosis)
        if first:
            rows.append(("First failed", first))
        for evidence in root.evidence:
            rows.append(("Evidence", f"{_where(evidence)}  {_clip(evidence.text)}"))
        if root.exception and root.exception not in " ".join(e.text for e in root.evidence):
            rows.append(("Exception", _clip(root.exception)))
        if root.user_frame:
            frame = root.user_frame
            rows.append(("Your code", f"{frame.file}:{frame.line} in {frame.function}"))
        for item in diagnosis.collateral:
            ranks = f"ranks {rank_ranges(item.ranks)}  " if item.ranks else ""
            cause = f"caused by the failure on rank {diagnosis.initiating_rank}" if diagnosis.initiating_rank is not None \
                else f"consequence of {item.explained_by}"
            rows.append(("Collateral", f"{ranks}{item.title or item.id} — {cause}"))
        explained = {c.id for c in diagnosis.collateral}
        rivals = [c for c in diagnosis.candidates[1:] if c.id not in explained][:3]
        if rivals:
            rows.append(("Alternatives", ", ".join(f"{c.id} {c.confidence:.2f}" for c in rivals)))
        rows.append(("Summary", _clip(root.summary, 400)))
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
        for number, step in enumerate(diagnosis.fix.steps, 1):
            rows.append(("", f"{number}. {_clip(step, 300)}"))
    if diagnosis.verify:
        rows.append(("Verify", _clip(diagnosis.verify, 300)))
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
        for evidence in diagnosis.unknown:
            out.append(f"- `{_where(evidence)}` `{_clip(evidence.text)}`")
        return "\n".join(out) + "\n"
    out.append(f"## traintriage: `{root.id}` — {root.title}\n")
    out.append(f"**Confidence** {root.confidence:.2f} · **severity** {root.severity} · **category** {root.category}\n")
    first = _first_failed(diagnosis)
    if first:
        out.append(f"**First failed:** {first}\n")
    out.append(root.summary + "\n")
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
        out.append(diagnosis.fix.summary + "\n")
        out.extend(f"{n}. {step}" for n, step in enumerate(diagnosis.fix.steps, 1))
        out.append("")
        for stack, code in diagnosis.fix.code.items():
            out.append(f"**{stack}**\n\n```\n{code.rstrip()}\n```\n")
    if diagnosis.verify:
        out.append(f"### Verify\n\n{diagnosis.verify}\n")
    if diagnosis.environment:
        out.append("### Environment\n")
        out.extend(f"- {k}: {v}" for k, v in diagnosis.environment.items())
    return "\n".join(out) + "\n"
