"""The one-line message of each editor diagnostic, in the report's own words."""

from __future__ import annotations

from traintriage.lsp.marks import Mark, Role
from traintriage.report.model import Collateral, Diagnosis
from traintriage.report.render import collateral_cause, report_words

UNKNOWN_FAILURE = "The run failed, but no known failure class explains it; this line stands out."


def diagnostic_message(diagnosis: Diagnosis, mark: Mark) -> str:
    root = diagnosis.root_cause
    if mark.role is Role.salient or root is None:
        return UNKNOWN_FAILURE
    words = report_words(diagnosis)
    if mark.role is Role.root:
        first = f" First failed: {words['first_failed']}." if words["first_failed"] else ""
        return f"Root cause {root.id} — {root.title}. {words['summary'] or root.summary}{first}"
    item = collateral_item(diagnosis, mark.entry_id or "")
    return f"Collateral of {root.id}, not a cause: {item.title or item.id} — {collateral_cause(diagnosis, item)}."


def collateral_item(diagnosis: Diagnosis, entry_id: str) -> Collateral:
    """The report's collateral entry for a class; a class the report folded into a note (an
    NCCL-named timeout on a gloo run) is still collateral of the root cause."""
    found = next((item for item in diagnosis.collateral if item.id == entry_id), None)
    explained_by = diagnosis.root_cause.id if diagnosis.root_cause else ""
    return found if found is not None else Collateral(id=entry_id, explained_by=explained_by)
