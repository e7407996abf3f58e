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

from _runner import TORCHRUN, run_logged

ID = "elastic-child-failed"

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


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29651", "--redirects", "3",
                                      "--log-dir", "logs", "train.py", "raise"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "4", "--master-port", "29652", "--tee", "3",
                                      "train.py", "exit"], files=files)
    run_logged(ID, "negative-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29653", "--tee", "3",
                                      "train.py", "state-dict"], files=files)
