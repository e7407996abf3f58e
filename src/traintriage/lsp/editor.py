"""A DocumentReport placed in the editor's text: LSP diagnostics, and the hover of each line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lsprotocol import types

from traintriage.lsp.diagnosing import DocumentReport
from traintriage.lsp.hover import hover_markdown
from traintriage.lsp.marks import Mark, Role
from traintriage.lsp.messages import diagnostic_message
from traintriage.lsp.positions import Place, editor_places

SOURCE = "traintriage"
_SEVERITY = {Role.root: types.DiagnosticSeverity.Error, Role.collateral: types.DiagnosticSeverity.Information,
             Role.salient: types.DiagnosticSeverity.Warning}


@dataclass
class EditorReport:
    report: DocumentReport
    diagnostics: list[types.Diagnostic]
    marked: dict[int, tuple[Mark, types.Range]] = field(default_factory=dict)
    """Editor line (0-based) -> the mark on it and the whole log line's range."""

    def hover(self, editor_line: int) -> types.Hover | None:
        found = self.marked.get(editor_line)
        if found is None:
            return None
        mark, where = found
        text = hover_markdown(self.report.diagnosis, mark)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=where)


def place_report(report: DocumentReport, text: str, units: Callable[[str], int]) -> EditorReport:
    """Diagnostics on the editor lines of each mark; marks beyond the text are dropped."""
    places = editor_places(text, (mark.line for mark in report.marks), units)
    placed = EditorReport(report=report, diagnostics=[])
    for mark in report.marks:
        place = places.get(mark.line)
        if place is None:
            continue
        where = _range(place)
        placed.diagnostics.append(types.Diagnostic(
            range=where, message=diagnostic_message(report.diagnosis, mark), severity=_SEVERITY[mark.role],
            source=SOURCE, code=mark.entry_id))
        for line in range(place.first, place.last + 1):
            placed.marked.setdefault(line, (mark, where))
    return placed


def _range(place: Place) -> types.Range:
    return types.Range(start=types.Position(line=place.first, character=0),
                       end=types.Position(line=place.last, character=place.end_units))
