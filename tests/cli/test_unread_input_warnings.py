"""Awkward inputs through the real command: streams read from their first byte, and what
could not be read (empty, cut, unreadable) named in a warning in every output format."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

TOOL = str(Path(sys.executable).with_name("traintriage"))
TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    run()\n'
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _diagnose(*args: str, stdin: str | None = None, shell: bool = False) -> subprocess.CompletedProcess[str]:
    command: list[str] | str = ["bash", "-c", " ".join([TOOL, "diagnose", *args])] if shell else [TOOL, "diagnose", *args]
    return subprocess.run(command, capture_output=True, text=True, input=stdin, timeout=60, check=False)


def _failing_log(path: Path, steps: int = 3000) -> Path:
    path.write_text("".join(f"step {i} loss 1.{i % 10}\n" for i in range(steps)) + TRACEBACK + ILLEGAL)
    return path


def test_process_substitution_is_read_from_its_first_byte(tmp_path: Path) -> None:
    log = _failing_log(tmp_path / "run.log")
    result = _diagnose("--format", "json", f"<(cat {log})", shell=True)
    diagnosis = json.loads(result.stdout)
    assert diagnosis["stats"]["bytes"] == log.stat().st_size
    assert diagnosis["root_cause"]["id"] == "cuda-illegal-memory-access"
    masked = subprocess.run(["bash", "-c", f"{TOOL} mask <(cat {log})"], capture_output=True, text=True, timeout=60)
    assert masked.stdout == log.read_text()


def test_named_fifo_is_read_once_whole(tmp_path: Path) -> None:
    log = _failing_log(tmp_path / "run.log")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(log.read_bytes()))
    writer.start()
    result = _diagnose("--format", "json", str(fifo))
    writer.join(timeout=10)
    assert json.loads(result.stdout)["stats"]["bytes"] == log.stat().st_size


def test_stdin_binary_is_refused_and_text_read_whole(tmp_path: Path) -> None:
    log = _failing_log(tmp_path / "run.log")
    result = _diagnose("--format", "json", "-", stdin=log.read_text())
    assert result.returncode in (0, 1, 2), result.stderr
    assert json.loads(result.stdout)["stats"]["bytes"] == log.stat().st_size
    binary = _diagnose("-", stdin="\x01\x02\x03\x04" * 3000)
    assert binary.returncode == 65 and "binary" in binary.stderr and binary.stderr.count("\n") == 1


@pytest.mark.parametrize("output_format", ["json", "text", "markdown"])
def test_every_format_names_what_was_not_read(tmp_path: Path, output_format: str) -> None:
    ranks = tmp_path / "logs"
    for rank in range(3):
        (ranks / "attempt_0" / str(rank)).mkdir(parents=True)
        _failing_log(ranks / "attempt_0" / str(rank) / "stderr.log", steps=10 if rank == 1 else 5)
    (ranks / "attempt_0" / "2" / "stdout.log").symlink_to(ranks / "gone.log")
    (ranks / "attempt_0" / "0" / "stdout.log").write_text("")
    blob = gzip.compress(b"".join(b"step %d loss 1.5\n" % i for i in range(20_000)), 1)
    (ranks / "extra.log.gz").write_bytes(blob[: len(blob) // 2])
    result = _diagnose("--format", output_format, str(ranks))
    report = result.stdout
    if output_format == "json":
        report = "\n".join(json.loads(result.stdout)["warnings"])
    assert "2/stdout.log" in report and "broken symbolic link" in report
    assert "0/stdout.log" in report and "empty" in report
    assert "extra.log.gz" in report and "cut short" in report
    assert result.returncode == 1  # the readable files were diagnosed


@pytest.mark.parametrize("name", ["empty.log", "empty.log.gz", "empty.log.zst", "-"])
def test_empty_input_is_never_a_silent_no_failure(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if name != "-":
        path.write_bytes(b"")
    result = _diagnose("--format", "json", "-" if name == "-" else str(path), stdin="")
    diagnosis = json.loads(result.stdout)
    assert diagnosis["status"] == "no-failure"
    assert any("empty" in warning for warning in diagnosis["warnings"])
    assert "empty" in result.stderr


def test_job_ids_in_a_file_name_are_not_ranks(tmp_path: Path) -> None:
    log = tmp_path / "slurm-884412_5.out"
    log.write_text(TRACEBACK + ILLEGAL)
    diagnosis = json.loads(_diagnose("--format", "json", str(log)).stdout)
    assert diagnosis["root_cause"]["id"] == "cuda-illegal-memory-access"
    assert diagnosis["initiating_rank"] is None
    assert all(e["rank"] is None for e in diagnosis["root_cause"]["evidence"])


def test_mask_without_paths_reads_stdin_whole(tmp_path: Path) -> None:
    log = _failing_log(tmp_path / "run.log", steps=20_000)
    result = subprocess.run([TOOL, "mask"], input=log.read_text(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout == log.read_text()
