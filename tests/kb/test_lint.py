"""The KB passes its own lint: schema, ids, RE2 patterns, examples, full catalog coverage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

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


def test_prose_cut_by_a_yaml_comment_is_reported(tmp_path: Path) -> None:
    from traintriage.kb.lint import comment_cut_problems

    entry = tmp_path / "x.yaml"
    entry.write_text(
        "symptoms:\n"
        "  - symptom: \"quoted, so #123 stays\"\n"
        "    why: fixed in releases after #17265 only\n"
        "prevention:\n"
        "  - Pin the release with the fix (PR #134338) in the image.\n"
        "  - \"Quoted, so PR #1 stays\"\n"
        "fix:\n"
        "  code: |\n"
        "    - name: x        # a comment inside a code block is meant\n"
        "    memory: 96Gi     # so is this one\n",
        encoding="utf-8")
    problems = comment_cut_problems(entry)
    assert problems == ["x.yaml:3: `why` is cut at ' #' (a YAML comment): quote the text",
                        "x.yaml:5: a list item is cut at ' #' (a YAML comment): quote the text"]
