"""`traintriage lsp` as an editor sees it: diagnostics on the right lines, hovers that say what
`traintriage diagnose --format json` says about the same text, no crash on binary content."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.lsp.logs import torchrun_oom_log, with_progress_bars
from tests.lsp.session import TOOL, Session

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("torchrun")]  # a real server process, not beside torchrun

URI = "file:///home/me/runs/job-77.log"
SEVERITY = types.DiagnosticSeverity


def cli_json(tmp_path: Path, text: str) -> dict[str, Any]:
    log = tmp_path / "job-77.log"
    log.write_bytes(text.encode())
    result = subprocess.run([str(TOOL), "diagnose", "--format", "json", str(log)], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def hover_text(hover: types.Hover | None) -> str:
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent) and hover.contents.kind == types.MarkupKind.Markdown
    return hover.contents.value


def test_root_cause_and_collateral_lines_and_their_hovers(tmp_path: Path) -> None:
    text = torchrun_oom_log()
    expected = cli_json(tmp_path, text)
    root = expected["root_cause"]
    root_lines = {e["line"] - 1 for e in root["evidence"]}
    collateral_lines = {e["line"] - 1 for e in expected["timeline"] if e["what"] != root["id"]}
    assert root_lines and collateral_lines

    async def scenario() -> tuple[list[types.Diagnostic], str, str, types.Hover | None, types.Hover | None]:
        async with Session() as lsp:
            diagnostics = await lsp.open(URI, text)
            on_root = hover_text(await lsp.hover(URI, min(root_lines)))
            on_collateral = hover_text(await lsp.hover(URI, min(collateral_lines)))
            return diagnostics, on_root, on_collateral, await lsp.hover(URI, 0), await lsp.hover(URI, 2)

    diagnostics, on_root, on_collateral, on_banner, on_step = asyncio.run(scenario())

    errors = [d for d in diagnostics if d.severity == SEVERITY.Error]
    assert {d.range.start.line for d in errors} == root_lines
    assert all(d.code == root["id"] and root["id"] in d.message and d.source == "traintriage" for d in errors)
    assert all(root["report_summary"] in d.message for d in errors)
    infos = {d.range.start.line: d for d in diagnostics if d.severity == SEVERITY.Information}
    assert collateral_lines <= set(infos) and not root_lines & set(infos)
    titles = {c["id"]: c["title"] for c in expected["collateral"]}
    for line in collateral_lines:
        assert infos[line].message.startswith(f"Collateral of {root['id']}, not a cause")
        assert titles[str(infos[line].code)] in infos[line].message

    first_failed = f"rank {expected['initiating_rank']}"
    steps = expected["fix"]["steps"]
    for hover in (on_root, on_collateral):
        assert root["id"] in hover and first_failed in hover and root["report_summary"] in hover
        positions = [hover.index(f"{number}. {step}") for number, step in enumerate(steps, 1)]
        assert positions == sorted(positions), "the fix steps in the order the CLI chose for this run"
    assert "Collateral, not a cause" in on_collateral and "Collateral" not in on_root
    assert on_banner is None and on_step is None


def test_lines_after_carriage_return_progress_bars(tmp_path: Path) -> None:
    """The editor breaks lines at a lone \\r too: the root cause line is where the editor shows it."""
    text = with_progress_bars(torchrun_oom_log())
    expected = cli_json(tmp_path, text)
    editor_lines = re.split(r"\r\n|\r|\n", text)
    oom_line = next(i for i, line in enumerate(editor_lines) if "OutOfMemoryError" in line)

    async def scenario() -> tuple[list[types.Diagnostic], types.Hover | None]:
        async with Session() as lsp:
            return await lsp.open(URI, text), await lsp.hover(URI, oom_line)

    diagnostics, hover = asyncio.run(scenario())
    assert [d.range.start.line for d in diagnostics if d.severity == SEVERITY.Error] == [oom_line]
    assert expected["root_cause"]["id"] in hover_text(hover)
    error = next(d for d in diagnostics if d.severity == SEVERITY.Error)
    assert error.range.end == types.Position(line=oom_line, character=len(editor_lines[oom_line]))


def test_binary_document_is_reported_not_crashed() -> None:
    binary = "\x7fELF\x02\x01\x01" + "\x00\x01\x02\x03" * 64 + "\ud800 end"
    uri = "file:///home/me/runs/core.txt"

    async def scenario() -> tuple[list[types.Diagnostic], list[str], types.Hover | None, list[types.Diagnostic]]:
        async with Session() as lsp:
            diagnostics = await lsp.open(uri, binary, language_id="plaintext")
            hover = await lsp.hover(uri, 0)
            after = await lsp.open(URI, torchrun_oom_log())  # still serving
            return diagnostics, lsp.logs, hover, after

    diagnostics, logs, hover, after = asyncio.run(scenario())
    assert diagnostics == [] and hover is None
    assert any("binary" in message and "core.txt" in message and "\n" not in message for message in logs)
    assert not any("Traceback" in message or "internal error" in message for message in logs)
    assert any(d.severity == SEVERITY.Error for d in after)


def test_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from traintriage.errors import UsageError
    from traintriage.lsp.command import lsp_command

    monkeypatch.setitem(sys.modules, "pygls", None)
    with pytest.raises(UsageError, match=r"^the language server needs the lsp extra: pip install 'traintriage\[lsp\]'"):
        lsp_command()
