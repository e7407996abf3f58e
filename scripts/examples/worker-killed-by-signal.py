"""Regenerate real examples for worker-killed-by-signal (CPU, torchrun + gloo).

positive-1.log: 4 ranks under `torchrun --tee 3`; rank 3 dies of SIGSEGV at step 6,
the agent SIGTERMs the healthy ranks and prints its ChildFailedError report.
positive-2.log: 2 ranks, no --tee (plain torchrun console); rank 1 dies of SIGABRT
(the way a C++ abort() / failed assert in an extension ends a process).
negative-1.log: 2 healthy ranks; the torchrun agent itself receives SIGTERM (what a
scheduler's scancel or a closed terminal does) and SIGTERMs its workers: every worker
shows -15 (SIGTERM), but no worker crashed (launcher-signal-received).

Run: .venv/bin/python scripts/examples/worker-killed-by-signal.py
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import tempfile
import time

from _runner import TORCHRUN, log_path, run_logged

ID = "worker-killed-by-signal"

TRAIN = r'''
import os, signal, sys, time
import torch
import torch.distributed as dist

SIG = getattr(signal, sys.argv[1])
BAD_RANK = int(sys.argv[2])
BAD_STEP = int(sys.argv[3])

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
if rank == 0:
    print(f"world_size={world} backend={dist.get_backend()}", flush=True)
for step in range(1, 11 if BAD_RANK < 99 else 200):
    x = torch.randn(32, 64)
    loss = model(x).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world
    opt.step(); opt.zero_grad()
    print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    if rank == BAD_RANK and step == BAD_STEP:
        os.kill(os.getpid(), SIG)
    time.sleep(0.2)
dist.destroy_process_group()
'''


def torchrun_cmd(args: list[str]) -> list[object]:
    """args: launcher arguments, then the script's SIGNAL BAD_RANK BAD_STEP."""
    return [TORCHRUN, *args[:-3], "train.py", *args[-3:]]


def run_and_signal_agent(args: list[str], name: str, after: float) -> None:
    """Stream the console straight into the log while the torchrun agent is SIGTERMed after `after` s."""
    out = log_path(ID, name)
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        with open(out, "w") as fh:
            proc = subprocess.Popen([str(c) for c in torchrun_cmd(args)], cwd=tmp, env=env, stdout=fh,
                                    stderr=subprocess.STDOUT, text=True)
            time.sleep(after)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
    print(f"wrote {out} (exit {proc.returncode})")


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", torchrun_cmd(["--nproc-per-node", "4", "--master-port", "29641", "--tee", "3",
                                                   "SIGSEGV", "3", "6"]), files=files)
    run_logged(ID, "positive-2.log", torchrun_cmd(["--nproc-per-node", "2", "--master-port", "29642",
                                                   "SIGABRT", "1", "4"]), files=files)
    # no rank misbehaves (BAD_RANK 99); the agent is signalled after ~12 s
    run_and_signal_agent(["--nproc-per-node", "2", "--master-port", "29643", "SIGSEGV", "99", "1"],
                         "negative-1.log", after=12.0)
