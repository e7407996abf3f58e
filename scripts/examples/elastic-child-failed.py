"""Regenerate real examples for elastic-child-failed (CPU, torchrun + gloo).

positive-1.log: 2 ranks, `--redirects 3 --log-dir logs`: the workers' own output goes to
  per-rank files, so torchrun's console shows only the agent and the ChildFailedError
  report (exitcode 1, error_file <N/A>): the wrapper with nothing else to go on.
positive-2.log: 4 ranks, `--tee 3`; rank 2 calls sys.exit(3) after a failed pre-flight
  check that prints nothing: the report is the only error in the log.
negative-1.log: 2 ranks, `--tee 3`; both ranks fail in load_state_dict. The worker's own
  error (state-dict-mismatch) is in the log and must win over the wrapper.

Run: .venv/bin/python scripts/examples/elastic-child-failed.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "elastic-child-failed"

TRAIN = r'''
import os, sys, time
import torch
import torch.distributed as dist

MODE = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
if MODE == "raise":
    print(f"[rank {rank}] building dataset index", flush=True)
    for step in range(1, 4):
        print(f"[rank {rank}] step {step}/200 loss {2.3 - 0.1 * step:.4f}", flush=True)
        dist.barrier()
        time.sleep(0.2)
    if rank == 1:
        raise RuntimeError("shard index out of date: rebuild with --rebuild-index")
    time.sleep(30)
elif MODE == "exit":
    for step in range(1, 4):
        print(f"[rank {rank}] step {step}/200 loss {2.3 - 0.1 * step:.4f}", flush=True)
        dist.barrier()
        time.sleep(0.2)
    if rank == 2:
        sys.exit(3)
    time.sleep(30)
elif MODE == "state-dict":
    ckpt = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 100))
    torch.save(ckpt.state_dict(), f"ckpt-{rank}.pt")
    print(f"[rank {rank}] resuming from ckpt-{rank}.pt", flush=True)
    model.load_state_dict(torch.load(f"ckpt-{rank}.pt", weights_only=True))
dist.destroy_process_group()
'''


def run(args: list[str], mode: str, out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        cmd = [str(TORCHRUN), *args, "train.py", mode]
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run(["--nproc-per-node", "2", "--master-port", "29651", "--redirects", "3",
         "--log-dir", "logs"], "raise", OUT / "positive-1.log")
    run(["--nproc-per-node", "4", "--master-port", "29652", "--tee", "3"], "exit",
        OUT / "positive-2.log")
    run(["--nproc-per-node", "2", "--master-port", "29653", "--tee", "3"], "state-dict",
        OUT / "negative-1.log")
