"""`traintriage diagnose` as a user meets it: exit codes, formats, and bad inputs."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from tests.cli.conftest import Result
from traintriage.report.model import SCHEMA_PATH

OOM = (
    "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
    "79.15 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 78.04 GiB memory in use. "
    "Of the allocated memory 76.90 GiB is allocated by PyTorch, and 310.00 MiB is reserved by PyTorch but unallocated.\n"
)
HEALTHY = "".join(f"[rank0]: step {i} loss {2.0 - i / 100:.3f}\n" for i in range(50)) + "training complete\n"

Cli = Callable[..., Result]


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_failure_exits_1_and_names_the_class(cli: Cli, tmp_path: Path) -> None:
    result = cli("diagnose", str(_write(tmp_path, "job.log", HEALTHY + OOM)))
    assert result.code == 1
    assert "cuda-oom" in result.out


def test_healthy_log_exits_0(cli: Cli, tmp_path: Path) -> None:
    result = cli("diagnose", str(_write(tmp_path, "ok.log", HEALTHY)))
    assert result.code == 0
    assert "no failure" in result.out


def test_json_output_validates_against_the_shipped_schema(cli: Cli, tmp_path: Path) -> None:
    result = cli("diagnose", "--format", "json", str(_write(tmp_path, "job.log", HEALTHY + OOM)))
    document = json.loads(result.out)
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["schema"] == "traintriage.diagnosis/1"
    assert document["root_cause"]["evidence"][0]["line"] == 52
    assert document["root_cause"]["evidence"][0]["rank"] == 1
    assert document["stats"]["lines"] == 52


def test_schema_file_is_current() -> None:
    from traintriage.report.model import diagnosis_json_schema

    assert json.loads(SCHEMA_PATH.read_text()) == json.loads(json.dumps(diagnosis_json_schema()))


def test_markdown_report(cli: Cli, tmp_path: Path) -> None:
    result = cli("diagnose", "--format", "markdown", str(_write(tmp_path, "job.log", OOM)))
    assert result.out.startswith("## traintriage: `cuda-oom`")
    assert "### Fix" in result.out


@pytest.mark.parametrize("opener", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_inputs(cli: Cli, tmp_path: Path, opener: Callable[[bytes], bytes]) -> None:
    suffix = {gzip.compress: ".gz", bz2.compress: ".bz2", lzma.compress: ".xz"}[opener]
    path = _write(tmp_path, f"job.log{suffix}", opener((HEALTHY + OOM).encode()))
    assert "cuda-oom" in cli("diagnose", str(path)).out


def test_stdin(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(OOM.encode())))
    assert cli("diagnose", "-").code == 1


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [(None, 66, "no such file"), (b"\x7fELF\x02\x01\x01\x00\x00\x00", 65, "binary"), (b"\x1f\x8b\x08\x00garbage", 66, "decompress")],
)
def test_bad_inputs_get_one_line_and_an_exit_code(cli: Cli, tmp_path: Path, content: bytes | None, code: int, message: str) -> None:
    path = tmp_path / ("missing.log" if content is None else "bad.log.gz" if content.startswith(b"\x1f\x8b") else "bad.log")
    if content is not None:
        path.write_bytes(content)
    result = cli("diagnose", str(path))
    assert result.code == code
    assert message in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1


def test_usage_errors_exit_64(cli: Cli) -> None:
    assert cli("diagnose").code == 64
    assert cli("diagnose", "--no-such-flag", "x").code == 64


def test_hostile_text_is_handled(cli: Cli, tmp_path: Path) -> None:
    """Invalid UTF-8, CRLF, ANSI colour, progress bars, a 3 MB line, regex-like text."""
    nasty = (b"\xff\xfe\xfa invalid utf-8 \xc3\x28\r\n"
             + b"\x1b[31mERROR\x1b[0m (((a*)*)*)*$^[[[\\\\ (?P<x>.*){1000000}\n"
             + b"".join(b"\r %3d%%|####| %d/100" % (i, i) for i in range(100)) + b"\n"
             + b"x" * (3 << 20) + b"\n"
             + OOM.encode())
    result = cli("diagnose", "--format", "json", str(_write(tmp_path, "nasty.log", nasty)))
    document = json.loads(result.out)
    assert document["root_cause"]["id"] == "cuda-oom"
    assert document["root_cause"]["evidence"][0]["line"] == 5


def test_secrets_never_reach_the_output_unless_no_mask(cli: Cli, tmp_path: Path) -> None:
    token = "hf_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb"
    text = (f"[rank1]: launching with HF_TOKEN={token} on user@example.com\n"
            "[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/home/alice/train.py", line 9, in <module>\n'
            f"[rank1]: RuntimeError: failed to fetch https://alice:s3cretpass@hub.example.org/model ({token})\n")
    path = _write(tmp_path, "job.log", text)
    for fmt in ("text", "json", "markdown"):
        out = cli("diagnose", "--format", fmt, str(path)).out
        assert "RuntimeError: failed to fetch" in out
        assert token not in out and "s3cretpass" not in out
    unmasked = cli("diagnose", "--format", "json", "--no-mask", str(path)).out
    assert token in unmasked
