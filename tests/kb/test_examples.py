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


def _specializing_examples() -> list[tuple[str, Path]]:
    kb = load_kb()
    return [(entry_id, path) for entry_id, path in _examples("positive") if kb.entries[entry_id].specializes]


@pytest.mark.parametrize(("entry_id", "path"), _specializing_examples(),
                         ids=lambda v: v.name if isinstance(v, Path) else v)
def test_a_specializing_entry_is_named_by_its_own_signatures(
        entry_id: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry that specializes another needs a supporting line beside its root line; without one
    its signature never fires, and only the similarity of the words (the second opinion) could
    still name it. Each positive must make it a candidate by its signatures."""
    from traintriage.analyze import engine

    scored: set[str] = set()
    score_entries = engine.score_entries

    def recording(*args: object) -> dict[str, object]:
        candidates = score_entries(*args)  # type: ignore[arg-type]
        scored.update(candidates)
        return candidates  # type: ignore[return-value]

    monkeypatch.setattr(engine, "score_entries", recording)
    diagnose([str(path)])
    assert entry_id in scored, f"{path.name}: no supporting line, so {entry_id}'s root signature cannot fire"
