"""Every KB entry against its own examples: positives must diagnose to it, negatives must not.

This is the test that stops a signature change from breaking an entry or stealing
another entry's examples.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.kb.loader import EXAMPLES_DIR, load_kb
from traintriage.pipeline import diagnose


def _examples(kind: str) -> list[tuple[str, Path]]:
    cases = []
    for entry_id in sorted(load_kb().entries):
        for path in sorted((EXAMPLES_DIR / entry_id).glob(f"{kind}-*.log")):
            cases.append((entry_id, path))
    return cases


@pytest.mark.parametrize(("entry_id", "path"), _examples("positive"), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_positive_example_diagnoses_to_its_entry(entry_id: str, path: Path) -> None:
    diagnosis = diagnose([str(path)])
    got = diagnosis.root_cause.id if diagnosis.root_cause else diagnosis.status.value
    assert got == entry_id, f"{path.name}: expected {entry_id}, got {got} (candidates {[c.id for c in diagnosis.candidates]})"


@pytest.mark.parametrize(("entry_id", "path"), _examples("negative"), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_negative_example_does_not_diagnose_to_its_entry(entry_id: str, path: Path) -> None:
    diagnosis = diagnose([str(path)])
    got = diagnosis.root_cause.id if diagnosis.root_cause else diagnosis.status.value
    assert got != entry_id, f"{path.name}: must not diagnose to {entry_id}"
