"""A plain `diagnose` command line skips typer (start-up time); it must behave exactly as the
typer command does, and hand everything else to typer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Result
from traintriage.cli import entry
from traintriage.cli.diagnose_cmd import OutputFormat

Cli = Callable[..., Result]
OOM = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["diagnose", "a.log"], (["a.log"], OutputFormat.text, True, None)),
        (["diagnose", "-f", "json", "a.log", "b/"], (["a.log", "b/"], OutputFormat.json, True, None)),
        (["diagnose", "--format=markdown", "--no-mask", "-"], (["-"], OutputFormat.markdown, False, None)),
        (["diagnose", "--jobs", "3", "a.log"], (["a.log"], OutputFormat.text, True, 3)),
        (["diagnose", "-j", "1", "--jobs=2", "a.log"], (["a.log"], OutputFormat.text, True, 2)),
    ],
)
def test_plain_diagnose_lines_are_read_without_typer(argv: list[str], expected: object) -> None:
    assert entry.plain_diagnose_args(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        [], ["--help"], ["kb", "list"], ["diagnose"], ["diagnose", "--help"], ["diagnose", "-h", "a.log"],
        ["diagnose", "--format", "yaml", "a.log"], ["diagnose", "--format"], ["diagnose", "--jobs", "0", "a.log"],
        ["diagnose", "-j", "x", "a.log"], ["diagnose", "--no-mask=1", "a.log"], ["diagnose", "--", "-weird.log"],
        ["diagnose", "--verbose", "a.log"],
    ],
)
def test_everything_else_goes_to_typer(argv: list[str]) -> None:
    assert entry.plain_diagnose_args(argv) is None


@pytest.mark.parametrize(
    "options", [[], ["--format", "json"], ["-f", "markdown", "--no-mask"], ["--jobs", "1"], ["--format", "yaml"]]
)
def test_fast_path_and_typer_give_the_same_result(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str]
) -> None:
    log = tmp_path / "job.log"
    log.write_text("".join(f"[rank0]: step {i} loss 2.0\n" for i in range(20)) + OOM)
    fast = cli("diagnose", *options, str(log))
    monkeypatch.setattr(entry, "plain_diagnose_args", lambda argv: None)
    typed = cli("diagnose", *options, str(log))
    if "json" in options:
        fast_doc, typed_doc = json.loads(fast.out), json.loads(typed.out)
        for document in (fast_doc, typed_doc):
            document["stats"]["seconds"] = 0
        assert fast_doc == typed_doc
    else:
        assert fast.out == typed.out
    assert (fast.code, fast.err) == (typed.code, typed.err)


def test_a_plain_diagnose_loads_no_cli_framework_validation_or_styling(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(OOM)
    probe = (
        "import sys\nfrom traintriage.cli.entry import run\n"
        f"sys.argv = ['traintriage', 'diagnose', {str(log)!r}]\n"
        "try:\n    run()\nexcept SystemExit as exit:\n    code = exit.code\n"
        "print(code, *(name in sys.modules for name in ('typer', 'pydantic', 'rich', 'yaml')), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.stderr.split()[-5:] == ["1", "False", "False", "False", "False"]
