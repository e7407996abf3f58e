"""`kb lint` on fix variants: conditions name known facts and values and can work as written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from traintriage.errors import KnowledgeBaseError
from traintriage.kb.lint import variant_problems
from traintriage.kb.loader import load_kb, parse_entry
from traintriage.kb.schema import Fix, FixStep, When


def _with_steps(steps: list[str | FixStep]):  # type: ignore[no-untyped-def]
    entry = load_kb().entries["training-hang"]
    return replace(entry, fix=Fix(summary=entry.fix.summary, steps=steps))


def test_conditions_that_cannot_work_as_written_are_reported() -> None:
    entry = _with_steps([
        "A step for every run.",
        FixStep(step="Empty condition.", when=When()),
        FixStep(step="Never shown reason.", when=When(not_already="anomaly-mode"), because="it is on"),
        FixStep(step="Both at once.", when=When(already="nccl-debug-info", not_already="nccl-debug-info"),
                because="the INFO lines are there"),
        FixStep(step="Fine.", when=When(backend="nccl", not_already="async-error-handling")),
    ])
    problems = variant_problems(entry)
    assert any("fix.steps[2] has an empty `when`" in p for p in problems)
    assert any("fix.steps[3]" in p and "never shown" in p for p in problems)
    assert any("fix.steps[4]" in p and "both required and excluded" in p for p in problems)
    assert not any("fix.steps[5]" in p for p in problems)
    assert variant_problems(load_kb().entries["training-hang"]) == []


@pytest.mark.parametrize(("when", "named"), [("{already: anomaly_mode}", "already"), ("{speed: fast}", "speed"),
                                              ("{stack: torch}", "stack")])
def test_an_unknown_fact_or_value_fails_with_its_name(tmp_path: Path, when: str, named: str) -> None:
    source = Path(load_kb().files["training-hang"]).read_text(encoding="utf-8")
    marker = "      when: {backend: nccl}\n"
    assert marker in source
    broken = tmp_path / "distributed" / "training-hang.yaml"
    broken.parent.mkdir()
    broken.write_text(source.replace(marker, f"      when: {when}\n", 1), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=named):
        parse_entry(broken)
