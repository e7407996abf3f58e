"""Over every KB example: the report's own words are whole sentences with no unfilled slot,
and every size or count it quotes comes from the log it reports on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traintriage.kb.loader import EXAMPLES_DIR, load_kb
from traintriage.kb.reporttext import is_one_sentence, placeholders, report_text_problems
from traintriage.pipeline import diagnose
from traintriage.report.render import render_text, summary_of

POSITIVES = sorted(EXAMPLES_DIR.glob("*/positive-*.log"))
_MEASURE = re.compile(r"\b\d+(?:\.\d+)? ?(?:[KMGT]i?B|ms)\b")
_OWN_ROWS = ("Root cause", "Collateral", "Summary", "Fix", "Note", "Verify", "")


def _own_text(report: str) -> str:
    """The rows written by traintriage (not quoted log lines): titles, summary, notes, fix, verify."""
    rows = [line for line in report.splitlines() if line[:13].strip() in _OWN_ROWS]
    return "\n".join(line[13:] for line in rows)


@pytest.mark.parametrize("text, slot", [
    ("Gloo collective timed out (Timed out waiting Nms for recv/send operation to complete)", "Nms"),
    ("Caught X in DataLoader worker process N", "X"),
    ("requires X>=Y", "X"),
    ("srun: error: node: task N: Exited with exit code", "N"),
    ("clone <repo> first", "<repo>"),
    ("a 2 N GiB buffer", "N"),
])
def test_placeholders_are_found(text: str, slot: str) -> None:
    assert slot in placeholders(text)


@pytest.mark.parametrize("text", ["NCCL 2.21 on node-N3", "set `--nnodes N` on every node", "CUDA_VISIBLE_DEVICES=0,1",
                                  "Xid 79 on GPU 3", "shape [64, 32]"])
def test_filled_text_has_no_placeholders(text: str) -> None:
    assert placeholders(text) == []


def test_no_entry_shows_an_unfilled_slot_or_another_runs_figures() -> None:
    """Titles, report summaries, fix and verify of every entry (what `kb lint` checks)."""
    problems = [p for entry in load_kb().entries.values() for p in report_text_problems(entry)]
    assert problems == []


@pytest.mark.parametrize("example", POSITIVES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_report_text_is_whole_filled_and_from_this_run(example: Path) -> None:
    diagnosis = diagnose([str(example)])
    if diagnosis.root_cause is None:
        return
    assert is_one_sentence(summary_of(diagnosis.root_cause))
    own = _own_text(render_text(diagnosis))
    assert not [slot for row in own.splitlines() for slot in placeholders(row)], own
    assert not re.search(r"(?:\.\.\.|…)\s*$", summary_of(diagnosis.root_cause))
    log = example.read_text(errors="replace")
    foreign = [m for m in _MEASURE.findall(own) if m not in log]
    assert not foreign, f"numbers from another run: {foreign}"


def test_lint_names_a_title_slot_and_one_runs_figures() -> None:
    from dataclasses import replace

    entry = load_kb().entries["gloo-collective-timeout"]
    slotted = replace(entry, title="Gloo collective timed out (Timed out waiting Nms for recv operation to complete)")
    assert any(p.startswith("gloo-collective-timeout: title") and "'Nms'" in p for p in report_text_problems(slotted))
    figures = replace(entry, report_summary="The all_reduce waited 1800000ms for rank 3 and gave up.")
    assert any("report_summary quotes one run's figures ['1800000ms']" in p for p in report_text_problems(figures))
