"""The KB passes its own lint: schema, ids, RE2 patterns, examples, full catalog coverage."""

from __future__ import annotations

from dataclasses import replace

import pytest

from traintriage.kb.lint import find_catalog, lint


def test_kb_lint_has_no_errors() -> None:
    report = lint()
    assert report.errors == []


@pytest.mark.skipif(find_catalog() is None, reason="shared catalog not beside this checkout")
def test_every_catalog_id_has_an_entry() -> None:
    report = lint()
    assert report.missing == []


def test_a_signature_matching_routine_progress_lines_is_rejected() -> None:
    from traintriage.kb.lint import healthy_lines, lint_entry
    from traintriage.kb.loader import load_kb

    entry = load_kb().entries["cuda-oom"]
    broad = replace(entry.signatures[0], id="too-broad", pattern=r"(?i)\bstep_time\b")
    noisy = replace(entry, signatures=[*entry.signatures, broad])
    problems = lint_entry(noisy, healthy_lines())
    assert any("too-broad matches a healthy progress line" in p for p in problems)
    assert not any("healthy" in p for p in lint_entry(entry, healthy_lines()))
