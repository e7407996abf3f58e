"""What a diagnosis reports for one log written to a temporary file (shared by the analysis tests)."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def facts_of(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "job.log"
    path.write_text(text)
    diagnosis = diagnose([str(path)])
    assert diagnosis.facts is not None
    return diagnosis.facts


def root_of(tmp_path: Path, text: str) -> str | None:
    """The root cause's id for one log, or None when the diagnosis names none."""
    path = tmp_path / "train.log"
    path.write_text(text)
    root = diagnose([str(path)]).root_cause
    return root.id if root else None
