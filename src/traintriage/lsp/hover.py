"""The Markdown shown when hovering a root cause or collateral line: the report's sentences
(`report_words`) and the fix chosen for this run (`fix_markdown`), as the CLI's Markdown
report and the web result page say them."""

from __future__ import annotations

from traintriage.lsp.marks import Mark, Role
from traintriage.lsp.messages import collateral_item
from traintriage.report.model import Diagnosis
from traintriage.report.quote import quote
from traintriage.report.render import TEXT_WIDTH, collateral_cause, fix_markdown, rank_ranges, report_words


def hover_markdown(diagnosis: Diagnosis, mark: Mark) -> str | None:
    """None for a line that is not a root cause or collateral line."""
    root = diagnosis.root_cause
    if root is None or mark.role is Role.salient:
        return None
    out: list[str] = []
    if mark.role is Role.collateral:
        item = collateral_item(diagnosis, mark.entry_id or "")
        ranks = f" on ranks {rank_ranges(item.ranks)}" if item.ranks else ""
        out.append(f"**Collateral, not a cause:** `{item.id}` {item.title}{ranks} — "
                   f"{collateral_cause(diagnosis, item)}.\n")
        out.append("---\n")
    words = report_words(diagnosis)
    out.append(f"**Root cause** `{root.id}` — {root.title} · confidence {root.confidence:.2f}\n")
    out.append((words["summary"] or root.summary) + "\n")
    for label, key in (("First failed", "first_failed"), ("Run", "facts")):
        if words[key]:
            out.append(f"**{label}:** {words[key]}\n")
    if words["exception"]:
        out.append(f"**Exception:**\n\n```text\n{quote(words['exception'], TEXT_WIDTH)}\n```\n")
    if words["your_code"]:
        out.append(f"**Your code:** `{words['your_code']}`\n")
    out.extend(f"> {note}\n" for note in diagnosis.notes)
    if diagnosis.fix:
        out.append("#### Fix\n")
        out.extend(fix_markdown(diagnosis.fix))
    if diagnosis.verify:
        out.append(f"**Verify:** {' '.join(diagnosis.verify.split())}\n")
    return "\n".join(out).rstrip() + "\n"
