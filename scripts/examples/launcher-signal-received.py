"""Regenerate real examples for launcher-signal-received (CPU, torchrun + gloo).

A healthy 2- or 4-rank training loop runs under torchrun; after a few steps this
script signals the torchrun *agent* process itself (not a worker), as a closed
terminal (SIGHUP) or a `kill`/`docker stop` (SIGTERM) would. The agent logs
"Received N death signal, shutting down workers", forwards the signal to its
workers and exits with torch.distributed.elastic.multiprocessing.api.SignalException.

positive-1.log: SIGHUP to torchrun (ssh session dropped, no nohup/tmux), 2 ranks.
positive-2.log: SIGTERM to torchrun, 4 ranks under `torchrun --tee 3`.
negative-1.log: SIGTERM sent to the workers (as a scheduler's grace-period signal
                would be); the training script's own SIGTERM handler saves a
                checkpoint and exits 0, torchrun reports success.
negative-2.log: the same SIGTERM to the agent, but the log is a SLURM job that hit
                its time limit: the `slurmstepd: error: *** STEP ... CANCELLED AT ...
                DUE TO TIME LIMIT ***` line (SLURM's printed format, inserted by this
                script at the moment the signal is sent, with `srun --label`'s
                "0: " prefix on the task output) explains the signal.

Run: .venv/bin/python scripts/examples/launcher-signal-received.py
"""

from __future__ import annotations

import datetime
import os
import pathlib
import signal
import subprocess
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "launcher-signal-received"

TRAIN = r'''
import os, signal, sys, time
import torch, torch.distributed as dist

HANDLE = sys.argv[1] == "handle"
stop = {"flag": False}
if HANDLE:
    def on_term(signum, frame):
        stop["flag"] = True
    signal.signal(signal.SIGTERM, on_term)

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, 200):
    loss = model(torch.randn(32, 64)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad); p.grad /= world
    opt.step(); opt.zero_grad()
    if rank == 0:
        print(f"Epoch 0: {step}/199 [{'#' * (step // 20):<10}] loss={loss.item():.4f}", flush=True)
    if stop["flag"]:
        print(f"rank {rank}: caught SIGTERM at step {step}, saving checkpoint to /tmp/ckpt/step{step}-rank{rank}.pt and exiting", flush=True)
        torch.save(model.state_dict(), f"/tmp/ckpt/step{step}-rank{rank}.pt")
        break
    time.sleep(0.25)
dist.destroy_process_group()
'''


def run(args: list[str], mode: str, sig: int, target: str, out: pathlib.Path,
        label: str = "", inject: str = "") -> None:
    os.makedirs("/tmp/ckpt", exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / "train.py"
        script.write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        cmd = [str(TORCHRUN), *args, str(script), mode]
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        lines: list[str] = []

        def reader() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(label + line)

        t = threading.Thread(target=reader)
        t.start()
        while not any("/199" in l and " 8/199" in l for l in lines):
            time.sleep(0.1)
            if proc.poll() is not None:
                break
        if inject:
            now = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
            lines.append(inject.format(now=now) + "\n")
        if target == "agent":
            os.kill(proc.pid, sig)
        else:  # the workers: every child of the agent
            kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            for k in kids:
                os.kill(int(k), sig)
        proc.wait(timeout=120)
        t.join()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(lines))
    print(f"{out}: exit {proc.returncode}, {len(lines)} lines")


if __name__ == "__main__":
    run(["--nproc-per-node", "2", "--master-port", "29701"], "plain", signal.SIGHUP, "agent",
        OUT / "positive-1.log")
    run(["--nproc-per-node", "4", "--master-port", "29702", "--tee", "3"], "plain", signal.SIGTERM, "agent",
        OUT / "positive-2.log")
    run(["--nproc-per-node", "2", "--master-port", "29703"], "handle", signal.SIGTERM, "workers",
        OUT / "negative-1.log")
    run(["--nproc-per-node", "2", "--master-port", "29704"], "plain", signal.SIGTERM, "agent",
        OUT / "negative-2.log", label="0: ",
        inject="slurmstepd: error: *** STEP 4817293.0 ON gpu-a100-017 CANCELLED AT {now} DUE TO TIME LIMIT ***")
