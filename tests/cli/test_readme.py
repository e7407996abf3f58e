"""The README stands alone: its commands and Python snippets run as written (on a log with a
failure and on one without), the files it names exist, and its speed figures are the ones
`make bench` wrote to benchmarks/RESULTS.md."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
README = (REPO / "README.md").read_text()
RESULTS = (REPO / "benchmarks" / "RESULTS.md").read_text()
TOOL = Path(sys.executable).with_name("traintriage")
SAMPLE = REPO / "src" / "traintriage" / "data" / "sample" / "job-4412.log"
HEALTHY = "".join(f"step {i} loss {2.5 - i / 1000:.3f} lr 3e-4\n" for i in range(200)) + "training finished\n"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(README) if lang == language]


def _workspace(tmp_path: Path, failing: bool) -> Path:
    """The files the README's examples name, as a user would have them."""
    log = SAMPLE.read_text() if failing else HEALTHY
    for name in ("job-4412.out", "job.out", "bad-run.log"):
        (tmp_path / name).write_text(log)
    (tmp_path / "good-run.log").write_text(HEALTHY)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "rank0.log").write_text(log)
    return tmp_path


def _command_lines() -> list[str]:
    lines = [line.split("  #")[0].strip() for body in _blocks("") for line in body.splitlines()]
    return [line for line in lines if line]


def test_readme_has_commands_and_python() -> None:
    commands = _command_lines()
    assert any(c.startswith("make run") for c in commands) and any(c.startswith(".venv/bin/") for c in commands)
    assert len(_blocks("python")) >= 2


@pytest.mark.parametrize("command", [c for c in _command_lines() if c.startswith(".venv/bin/traintriage")])
def test_each_cli_line_runs_as_written(tmp_path: Path, command: str) -> None:
    workspace = _workspace(tmp_path, failing=True)
    line = command.replace(".venv/bin/traintriage", str(TOOL), 1)
    result = subprocess.run(["bash", "-c", line], cwd=workspace, capture_output=True, text=True, timeout=300)
    allowed = (0, 1, 2) if " diagnose " in f" {command} " else (0,)
    assert result.returncode in allowed, result.stderr[-500:]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [c for c in _command_lines() if c.startswith("make ")])
def test_each_make_line_names_a_target(command: str) -> None:
    target = command.split()[1]
    result = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("failing", [True, False], ids=["failure", "no-failure"])
@pytest.mark.parametrize("number", range(len(_blocks("python"))))
def test_each_python_snippet_runs(tmp_path: Path, number: int, failing: bool) -> None:
    workspace = _workspace(tmp_path, failing)
    code = _blocks("python")[number]
    result = subprocess.run([sys.executable, "-c", code], cwd=workspace, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-800:]
    if number == 0:
        assert ("cuda-oom" in result.stdout) if failing else result.stdout.startswith("no-failure")


def test_every_file_the_readme_names_is_in_the_repository() -> None:
    assert "../" not in README, "the README must stand alone in a clone"
    named = set(re.findall(r"(?<![\w./])((?:src|docs|tests|benchmarks|scripts|corpus)/[\w./<>*-]*)", README))
    assert len(named) >= 5
    for path in named:
        pattern = re.sub(r"<[^>]+>", "*", path.rstrip("."))
        assert any(REPO.glob(pattern)) if "*" in pattern else (REPO / pattern).exists(), path


def _results_row(workload: str) -> list[str]:
    row = next(line for line in RESULTS.splitlines() if line.startswith(f"| {workload} "))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_speed_figures_are_the_benchmarks() -> None:
    """The README's speed sentence quotes the latest `make bench` table, not a remembered figure."""
    header = [cell.strip() for cell in RESULTS.split("| workload ")[1].splitlines()[0].strip("|").split("|")]
    columns = ["workload", *header]

    def row(prefix: str) -> dict[str, str]:
        workload = next(w for w in re.findall(r"^\| (\S+) ", RESULTS, re.M) if w.startswith(prefix))
        return dict(zip(columns, _results_row(workload), strict=True))

    console, dense = row("console-64rank-2048MB"), row("metric-dense-64rank-2048MB")
    ranks, fleet, huge = row("ranks-1024x"), row("fleet-"), row("console-64rank-10240MB")
    small_ms = int(re.search(r"Small-log CLI wall time[^:]*: (\d+) ms", RESULTS).group(1))  # type: ignore[union-attr]
    speed = " ".join(README.split("Speed, measured by `make bench`")[1].split("\n\n")[0].split())
    ratio = "× rg -c -i error"
    assert f"about {float(console['traintriage s']):.1f} s, {float(console[ratio]):.1f}× the time" in speed
    assert f"({float(dense['traintriage s']):.1f} s, {float(dense[ratio]):.1f}×," in speed
    assert f"take {float(ranks[ratio]):.1f}×" in speed
    assert f"({float(fleet[ratio]):.0f}×, {fleet['peak RSS MB']} MB)" in speed
    assert f"about {round(int(console['peak RSS MB']), -1)} MB peak memory" in speed
    assert f"takes about {round(small_ms, -1)} ms" in speed
    assert f"10 GB console log takes {float(huge['traintriage s']):.1f} s ({float(huge[ratio]):.1f}×) in {huge['peak RSS MB']} MB" \
        in speed


def test_the_sample_make_run_diagnoses_exists() -> None:
    assert shutil.which("make") and SAMPLE.exists()
