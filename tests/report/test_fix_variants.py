"""Fix variants: chosen by the facts of the run, first and with their reason; contradicted
ones left to `kb show`; and every variant in the KB proven by an example that chooses it."""

from __future__ import annotations

from functools import cache

import pytest

from traintriage.analyze.facts import RunFacts
from traintriage.kb.loader import EXAMPLES_DIR, load_kb
from traintriage.kb.schema import Entry, FixStep, When
from traintriage.pipeline import diagnose
from traintriage.report.fixes import Fit, choose_fix, fit
from traintriage.report.model import Diagnosis


def test_fit_matches_contradicts_or_cannot_tell() -> None:
    load = RunFacts(phase="model-load", stack=["deepspeed", "pytorch"], all_ranks_same=False)
    assert fit(When(phase="model-load"), load) is Fit.matches
    assert fit(When(phase=["first-step", "step"]), load) is Fit.contradicts
    assert fit(When(stack="deepspeed"), load) is Fit.matches
    assert fit(When(dtype="fp32"), load) is Fit.unknown
    assert fit(When(all_ranks_same=True), load) is Fit.contradicts
    assert fit(When(phase="step"), RunFacts(phase="first-step")) is Fit.matches


def test_the_report_leads_with_the_variant_and_drops_the_contradicted() -> None:
    entry = load_kb().entries["cuda-oom"]
    chosen = choose_fix(entry, RunFacts(phase="model-load"))
    assert chosen.chosen >= 1 and "loaded or moved to the GPU" in chosen.because[0]
    assert not any("Halve the per-device batch" in step for step in chosen.steps)
    assert chosen.left_out > 0
    unknown = choose_fix(entry, RunFacts())
    assert unknown.chosen == 0 and unknown.left_out == 0
    assert len(unknown.steps) == len(entry.fix.steps)


@cache
def _diagnosis(path: str) -> Diagnosis:
    return diagnose([path])


def _variants() -> list[tuple[Entry, FixStep]]:
    """The variants that can lead the fix (a `because` and a condition that selects); the
    filters are proven by tests/report/test_fix_filters.py."""
    return [(entry, step) for entry in load_kb().entries.values() for step in entry.fix.steps
            if isinstance(step, FixStep) and step.because and step.when.selects]


@pytest.mark.parametrize(("entry", "variant"), _variants(), ids=lambda v: v.id if isinstance(v, Entry) else v.step[:40])
def test_every_variant_is_chosen_by_one_of_its_entrys_examples(entry: Entry, variant: FixStep) -> None:
    for path in sorted((EXAMPLES_DIR / entry.id).glob("positive-*.log")):
        diagnosis = _diagnosis(str(path))
        fix = diagnosis.fix
        if diagnosis.root_cause and diagnosis.root_cause.id == entry.id and fix and \
                variant.step in fix.steps[: fix.chosen]:
            assert variant.because in fix.because
            return
    pytest.fail(f"no positive example of {entry.id} chooses the variant {variant.step[:60]!r}")
