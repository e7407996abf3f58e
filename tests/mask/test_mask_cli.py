"""`traintriage mask` (mask_command): files, stdin, archives, and one-line errors."""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.mask.fakes import hf_token, leaked

TOKEN = hf_token(301)
LOG = f"start\nHF_TOKEN={TOKEN}\nMASTER_ADDR=10.3.2.1\nstep=1 loss=2.5\n".encode()
EXPECTED = b"start\nHF_TOKEN=<HF_TOKEN-1>\nMASTER_ADDR=<IP-1>\nstep=1 loss=2.5\n"


def _run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "traintriage.cli.mask_cmd", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def test_stdin_to_stdout() -> None:
    result = _run("-", stdin=LOG)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED


def test_no_argument_means_stdin() -> None:
    assert _run(stdin=LOG).stdout == EXPECTED


@pytest.mark.parametrize(
    ("suffix", "pack"),
    [
        (".log", lambda b: b),
        (".log.gz", gzip.compress),
        (".log.bz2", bz2.compress),
        (".log.xz", lzma.compress),
        (".log.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_plain_and_compressed_files(tmp_path: Path, suffix: str, pack: object) -> None:
    path = tmp_path / f"train{suffix}"
    path.write_bytes(pack(LOG))  # type: ignore[operator]
    result = _run(str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED


def test_each_file_is_its_own_log(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes(b"10.0.0.1\n10.0.0.2\n")
    (tmp_path / "b.log").write_bytes(b"10.0.0.2\n")
    result = _run(str(tmp_path / "a.log"), str(tmp_path / "b.log"))
    assert result.stdout == b"<IP-1>\n<IP-2>\n<IP-1>\n"


def test_missing_file_is_one_line_and_66_and_others_still_run(tmp_path: Path) -> None:
    (tmp_path / "ok.log").write_bytes(LOG)
    result = _run(str(tmp_path / "missing.log"), str(tmp_path / "ok.log"))
    assert result.returncode == 66
    assert result.stdout == EXPECTED
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert b"Traceback" not in result.stderr


def test_binary_file_is_65(tmp_path: Path) -> None:
    path = tmp_path / "model.log"
    path.write_bytes(b"\x00\x01\x02PK\x03\x04" * 100)
    result = _run(str(path))
    assert result.returncode == 65
    assert b"binary" in result.stderr and b"Traceback" not in result.stderr


def test_truncated_archive_is_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress(LOG * 1000)[:200])
    result = _run(str(path))
    assert result.returncode == 66
    assert b"Traceback" not in result.stderr
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert not leaked(TOKEN, result.stdout.decode())


def test_closed_pipe_is_quiet() -> None:
    big = LOG * 20000
    proc = subprocess.Popen(
        [sys.executable, "-m", "traintriage.cli.mask_cmd", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.close()
    _, err = proc.communicate(big, timeout=120)
    assert b"Traceback" not in err
