"""Per-rank logs of a real torchrun job (gloo, CPU): the multi-file upload users make."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import SCENARIO, TORCHRUN, free_port


def crashed_run(out: Path) -> list[Path]:
    """A 3-rank DDP job whose rank 2 crashes at step 3, its ranks' output in one file each
    (`rank0.log` ...) beside the launcher's console (`launcher.log`)."""
    pytest.importorskip("torch")
    log_dir = out / "torchrun-logs"
    command = [str(TORCHRUN), "--nproc-per-node", "3", "--master-addr", "127.0.0.1", "--master-port",
               str(free_port()), "--log-dir", str(log_dir), "--redirects", "3", str(SCENARIO),
               "--mode", "crash", "--fault-rank", "2", "--fault-step", "3"]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    launcher = out / "launcher.log"
    with launcher.open("wb") as console:
        subprocess.run(command, stdout=console, stderr=subprocess.STDOUT, timeout=180, env=env, check=False)
    files = [launcher]
    for stderr in sorted(log_dir.glob("**/attempt_0/*/stderr.log")):
        rank = stderr.parent.name
        target = out / f"rank{rank}.log"
        target.write_bytes(stderr.read_bytes() + (stderr.parent / "stdout.log").read_bytes())
        files.append(target)
    return files
