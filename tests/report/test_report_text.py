"""Over every KB example: the report's own words are whole sentences with no unfilled slot,
and every size or count it quotes comes from the log it reports on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traintriage.kb.loader import EXAMPLES_DIR
from traintriage.kb.reporttext import is_one_sentence, placeholders
from traintriage.pipeline import diagnose
from traintriage.report.render import render_text, summary_of

POSITIVES = sorted(EXAMPLES_DIR.glob("*/positive-*.log"))
_MEASURE = re.compile(r"\b\d+(?:\.\d+)? ?(?:[KMGT]i?B|ms)\b")
_OWN_ROWS = ("Summary", "Fix", "Note", "Verify", "")


def _own_text(report: str) -> str:
    """The rows written by traintriage (not quoted log lines)."""
    rows = [line for line in report.splitlines() if line[:13].strip() in _OWN_ROWS]
    return "\n".join(line[13:] for line in rows)


@pytest.mark.parametrize("example", POSITIVES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_report_text_is_whole_filled_and_from_this_run(example: Path) -> None:
    diagnosis = diagnose([str(example)])
    if diagnosis.root_cause is None:
        return
    assert is_one_sentence(summary_of(diagnosis.root_cause))
    own = _own_text(render_text(diagnosis))
    assert not placeholders(own), own
    assert not re.search(r"(?:\.\.\.|…)\s*$", summary_of(diagnosis.root_cause))
    log = example.read_text(errors="replace")
    foreign = [m for m in _MEASURE.findall(own) if m not in log]
    assert not foreign, f"numbers from another run: {foreign}"
