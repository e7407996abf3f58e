"""Run the real `traintriage` entry point in-process: argv in, (exit code, stdout, stderr) out."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from traintriage.cli.entry import run


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    def invoke(*args: str) -> Result:
        monkeypatch.setattr(sys, "argv", ["traintriage", *args])
        with pytest.raises(SystemExit) as exit_info:
            run()
        captured = capsys.readouterr()
        code = exit_info.value.code
        return Result(code if isinstance(code, int) else 0, captured.out, captured.err)

    return invoke
