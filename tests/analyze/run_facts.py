"""The facts a diagnosis reports for one log written to a temporary file (shared by the facts tests)."""

from __future__ import annotations

from pathlib import Path

from traintriage.pipeline import diagnose


def facts_of(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "job.log"
    path.write_text(text)
    diagnosis = diagnose([str(path)])
    assert diagnosis.facts is not None
    return diagnosis.facts
