"""Real torchrun jobs (gloo, CPU): run once per scenario, shared by the tests that read them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).parent / "scenarios" / "ddp_fault.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_torchrun(out: Path, nproc: int, *args: str, timeout: float = 180.0, healthy: bool = False) -> Path:
    """Run the scenario under torchrun --tee 3 and save its console as a log file. A run meant to
    be healthy is retried (up to three times) until torchrun exits 0: torch 2.13 with gloo now and
    then aborts a rank while the process exits, and that run's log is rightly not healthy."""
    pytest.importorskip("torch")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for _ in range(3 if healthy else 1):
        command = [str(TORCHRUN), "--nproc-per-node", str(nproc), "--master-addr", "127.0.0.1",
                   "--master-port", str(free_port()), "--tee", "3", str(SCENARIO), *args]
        with out.open("wb") as console:
            done = subprocess.run(command, stdout=console, stderr=subprocess.STDOUT, timeout=timeout, env=env,
                                  check=False)
        if done.returncode == 0:
            break
    return out
