"""Which lines of the document the diagnosis is about, and in what role.

The root cause's evidence lines are the report's own (`root_cause.evidence`); the report
names collateral classes but keeps no lines for them, so their lines come from the same
Run the report was built from, as the web page's per-rank events do (web/document.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from traintriage.pipeline import Run
from traintriage.report.model import Diagnosis

MAX_COLLATERAL_MARKS = 500
"""A 1,000-rank job can print many thousands of timeouts; the earliest lines say enough."""


class Role(str, Enum):
    root = "root"
    collateral = "collateral"
    salient = "salient"
    """A line the report lists for a failure no known class explains."""


@dataclass(frozen=True)
class Mark:
    line: int
    """1-based line in the log, as the report numbers it."""
    role: Role
    entry_id: str | None = None
    """The failure class of a root or collateral line."""


def marks_of(diagnosis: Diagnosis, run: Run) -> list[Mark]:
    """Root lines first, then collateral (a line claimed by the root cause stays root), then
    the salient lines of an unknown failure."""
    marks: list[Mark] = []
    taken: set[int] = set()
    root = diagnosis.root_cause
    if root is not None:
        for evidence in root.evidence:
            if evidence.line not in taken:
                taken.add(evidence.line)
                marks.append(Mark(evidence.line, Role.root, root.id))
        collateral = sorted((max(1, o.hit.line), candidate.entry_id)
                            for candidate, _ in run.analysis.collateral for o in candidate.roots)
        kept = 0
        for line, entry_id in collateral:
            if kept < MAX_COLLATERAL_MARKS and line not in taken:
                taken.add(line)
                marks.append(Mark(line, Role.collateral, entry_id))
                kept += 1
    for evidence in diagnosis.unknown:
        if evidence.line not in taken:
            taken.add(evidence.line)
            marks.append(Mark(evidence.line, Role.salient))
    return marks
