"""Review records: the schema keeps them honest and `kb lint` warns about stale or missing ones."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from traintriage.kb.lint import lint
from traintriage.kb.loader import ENTRIES_DIR, load_kb
from traintriage.kb.review import newest_versions, review_warnings, version_key
from traintriage.kb.schema import Entry, Review, validate_entry


def _entry(entry_id: str, versions: dict[str, str] | None) -> Entry:
    base = load_kb().entries["cuda-oom"]
    review = None if versions is None else Review(date=date(2026, 12, 3), versions=versions,
                                                  sources=["https://docs.pytorch.org/docs/stable/notes/cuda.html"])
    return replace(base, id=entry_id, reviewed=review)


def _raw_with_review(review_yaml: str) -> dict[str, Any]:
    raw = yaml.safe_load((ENTRIES_DIR / "memory" / "cuda-oom.yaml").read_text(encoding="utf-8"))
    raw["reviewed"] = yaml.safe_load(review_yaml)
    assert isinstance(raw, dict)
    return raw


def test_versions_compare_numerically_not_as_text() -> None:
    assert version_key("2.9") < version_key("2.13") < version_key("2.13.1")
    assert version_key("0.16") < version_key("0.19.0")
    assert version_key("2.15.0 (PyPI wheel: +cu132, torch.version.cuda 13.2)") == version_key("2.15.0")
    assert version_key("master 284c3b9 (25.05+ wording)") == version_key("25.05") < version_key("26.11")
    assert version_key("main") == ()
    assert newest_versions([_entry("a", {"pytorch": "2.9"}), _entry("b", {"pytorch": "2.13"})]) == {"pytorch": "2.13"}


def test_a_review_of_a_release_line_covers_its_patch_releases() -> None:
    warnings = review_warnings([_entry("line", {"python": "3.11", "numpy": "2.4"}),
                                _entry("patch", {"python": "3.11.7", "numpy": "2.4.6"}),
                                _entry("older", {"python": "3.10", "numpy": "2.4"})])
    assert warnings == ["older: reviewed 2026-12-03 against older releases: python 3.10 (the KB names 3.11.7)"]


def test_unreviewed_and_outdated_entries_are_reported_and_current_ones_are_not() -> None:
    warnings = review_warnings([
        _entry("current", {"pytorch": "2.15", "nccl": "2.30"}),
        _entry("outdated", {"pytorch": "2.13", "nccl": "2.30"}),
        _entry("never", None),
    ])
    assert warnings == [
        "never: never reviewed against upstream (no `reviewed` record)",
        "outdated: reviewed 2026-12-03 against older releases: pytorch 2.13 (the KB names 2.15)",
    ]


def test_a_review_record_is_validated_when_the_entry_is_read() -> None:
    entry = validate_entry(_raw_with_review(
        "{date: 2026-12-03, versions: {pytorch: '2.13'}, sources: [https://github.com/pytorch/pytorch]}"))
    assert entry.reviewed is not None and entry.reviewed.versions == {"pytorch": "2.13"}


@pytest.mark.parametrize("review_yaml", [
    "{date: 2026-12-03, versions: {pytorch: 2.20}, sources: [https://github.com/pytorch/pytorch]}",  # 2.2 after YAML
    "{date: 2026-12-03, versions: {pytorch: '2.13'}, sources: [http://example.com/page]}",
    "{date: 2026-12-03, versions: {}, sources: [https://github.com/pytorch/pytorch]}",
    "{date: 2026-12-03, versions: {pytorch: '2.13'}, sources: []}",
    "{versions: {pytorch: '2.13'}, sources: [https://github.com/pytorch/pytorch]}",
])
def test_unquoted_versions_plain_http_and_empty_records_are_rejected(review_yaml: str) -> None:
    with pytest.raises(ValidationError):
        validate_entry(_raw_with_review(review_yaml))


def test_review_warnings_do_not_fail_the_lint() -> None:
    report = lint()
    assert report.errors == []
    assert report.ok
    unreviewed = {e.id for e in load_kb().entries.values() if e.reviewed is None}
    assert {w.split(":", 1)[0] for w in report.warnings} >= unreviewed
