"""The KB passes its own lint: schema, ids, RE2 patterns, examples, full catalog coverage."""

from __future__ import annotations

import pytest

from traintriage.kb.lint import find_catalog, lint


def test_kb_lint_has_no_errors() -> None:
    report = lint()
    assert report.errors == []


@pytest.mark.skipif(find_catalog() is None, reason="shared catalog not beside this checkout")
def test_every_catalog_id_has_an_entry() -> None:
    report = lint()
    assert report.missing == []
