"""Regenerate real examples for collective-mismatch (CPU, torchrun + gloo).

positive-1.log: 3 ranks, `--tee 3`, TORCH_DISTRIBUTED_DEBUG=DETAIL; at step 4 rank 1 takes
  an `if rank == 1` branch that calls broadcast while ranks 0 and 2 call all_reduce.
positive-2.log: 2 ranks, plain console (no --tee), TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 1
  all-reduces a tensor of another shape (a rank-dependent batch size).
positive-3.log: the same 2-rank job without TORCH_DISTRIBUTED_DEBUG: gloo's own size check
  aborts rank 0 ("Received data size doesn't match expected size. Is there a distributed
  collective mismatch in your code?", exitcode -6) and rank 1 loses its peer.

Run: .venv/bin/python scripts/examples/collective-mismatch.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "collective-mismatch"

TRAIN = r'''
import sys, time
import torch
import torch.distributed as dist

MODE = sys.argv[1]
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(16, 16)
for step in range(1, 7):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    if step == 4:
        if MODE == "op":
            stats = torch.tensor([loss.item(), 1.0])
            if rank == 1:
                dist.broadcast(stats, src=1)
            else:
                dist.all_reduce(stats)
        elif MODE == "shape":
            n = 5 if rank == 1 else 4
            dist.all_reduce(torch.ones(n, 3))
    model.zero_grad()
    time.sleep(0.2)
dist.destroy_process_group()
'''


def run(args: list[str], mode: str, out: pathlib.Path, debug: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        if debug:
            env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
        cmd = [str(TORCHRUN), *args, "train.py", mode]
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run(["--nproc-per-node", "3", "--master-port", "29661", "--tee", "3"], "op",
        OUT / "positive-1.log", debug=True)
    run(["--nproc-per-node", "2", "--master-port", "29662"], "shape",
        OUT / "positive-2.log", debug=True)
    run(["--nproc-per-node", "2", "--master-port", "29663"], "shape",
        OUT / "positive-3.log", debug=False)
