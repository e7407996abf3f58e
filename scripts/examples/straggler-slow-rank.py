#!/usr/bin/env python
"""Regenerate the examples of `straggler-slow-rank` with real `torchrun --nproc-per-node 4` gloo jobs on CPU.

Every rank logs `step N loss X step_time Y` (its own compute/data time before the gradient
all_reduce) and the time it then waited in the collective. One rank is slowed every step
(time.sleep standing in for a throttled GPU, a slow disk or a noisy neighbour): its
step_time is consistently ~3x the others', and the *other* ranks' allreduce wait grows by
the same amount because they wait for it. The runs finish; nothing errors.

positive-1: torchrun --tee 3, rank 3 slow (extra 120 ms a step).
positive-2: srun --label (4 tasks, 2 per node), rank 2 slow on node-1 (extra 300 ms a step), key=value
            logs in seconds.
negative-1: the same job with no straggler (all ranks within noise of each other).

    .venv/bin/python scripts/examples/straggler-slow-rank.py
"""
# ---- launcher helpers (self-contained; each scripts/examples/*.py carries its own copy) ----
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
ENV = dict(os.environ, PYTHONWARNINGS="ignore:Failed to initialize NumPy", PYTHONUNBUFFERED="1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_worker(src: str, name: str = "train.py") -> pathlib.Path:
    d = pathlib.Path(tempfile.mkdtemp(prefix="job-"))
    p = d / name
    p.write_text(src)
    return p


def torchrun(src: str, args: list[str], env: dict | None = None, timeout: int = 90) -> str:
    """Run `torchrun ARGS train.py` and return its console (stdout+stderr interleaved)."""
    script = write_worker(src)
    cmd = [str(BIN / "torchrun"), *args, str(script)]
    p = subprocess.run(cmd, cwd=script.parent, env={**ENV, **(env or {})}, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.stdout


def labeled(src: str, world: int, prefix: str, env: dict | None = None, timeout: int = 90,
            per_rank_env: dict | None = None, epilogue: str = "", dist_env: bool = True) -> str:
    """Start WORLD python processes with the env:// variables a launcher sets and prefix every
    line the way the launcher does (srun --label: '{rank}: ', mpirun --tag-output:
    '[1,{rank}]<{stream}>:', pdsh/deepspeed: '{host}: ')."""
    script = write_worker(src)
    port = free_port()
    out: list[str] = []
    lock = threading.Lock()
    procs = []

    def pump(stream, rank, name):
        for line in stream:
            with lock:
                out.append(prefix.format(rank=rank, stream=name, host=f"node-{rank // 2}") + line)

    for r in range(world):
        e = {**ENV, **(env or {}), "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r % 2), "SLURM_NTASKS": str(world)}
        if dist_env:  # what torchrun / a correct sbatch script exports; srun alone does not
            e.update(RANK=str(r), LOCAL_RANK=str(r % 2), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE="2",
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        e.update((per_rank_env or {}).get(r, {}))
        p = subprocess.Popen([str(BIN / "python"), str(script)], cwd=script.parent, env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        for s, n in ((p.stdout, "stdout"), (p.stderr, "stderr")):
            threading.Thread(target=pump, args=(s, r, n), daemon=True).start()
    deadline = time.time() + timeout
    first_fail = None
    while time.time() < deadline and any(p.poll() is None for p in procs):
        for r, p in enumerate(procs):
            if first_fail is None and p.poll() not in (None, 0):
                first_fail = (r, p.returncode, time.time())
        if first_fail and time.time() - first_fail[2] > 3:
            break  # like srun/mpirun: once a task failed, the step is torn down
        time.sleep(0.1)
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    time.sleep(0.3)
    if first_fail is None:
        for r, p in enumerate(procs):
            if p.returncode not in (None, 0):
                first_fail = (r, p.returncode, 0)
                break
    text = "".join(out)
    if first_fail and epilogue:
        r, rc, _ = first_fail
        text += epilogue.format(rank=r, rc=rc, host=f"node-{r // 2}")
    return text


SRUN_EPILOGUE = "srun: error: {host}: task {rank}: Exited with exit code {rc}\n"
MPIRUN_EPILOGUE = """--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[40217,1],{rank}]
  Exit code:    {rc}
--------------------------------------------------------------------------
"""


def python(src: str, env: dict | None = None, timeout: int = 60) -> str:
    """Run the worker as a plain `python train.py` (no launcher)."""
    script = write_worker(src)
    p = subprocess.run([str(BIN / "python"), str(script)], cwd=script.parent, env={**ENV, **(env or {})},
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.stdout


def save(id_: str, name: str, text: str) -> None:
    d = ROOT / "src" / "traintriage" / "kb" / "examples" / id_
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)
    print(f"wrote {d / name} ({len(text.splitlines())} lines)")
# ---- end helpers ----

WORKER = r'''
import datetime, logging, os, random, sys, time
import torch, torch.distributed as dist, torch.nn as nn

SLOW = int(os.environ.get("SLOW_RANK", "-1"))
STYLE = os.environ.get("LOG_STYLE", "plain")
rank_env = os.environ["RANK"]
logging.basicConfig(format=f"%(asctime)s [rank{rank_env}] %(levelname)s %(name)s: %(message)s",
                    level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
random.seed(rank)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
if rank == 0:
    log.info("world_size=%d steps=40 micro_batch=32", world)
start = time.time()
for step in range(1, 41):
    t0 = time.time()
    time.sleep(0.05 + random.uniform(0, 0.01))  # data loading
    if rank == SLOW:
        time.sleep(float(os.environ.get("SLOW_EXTRA", "0.12")))  # the straggler: throttled device / slow storage
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    compute = time.time() - t0
    t1 = time.time()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world
    wait = time.time() - t1
    opt.step(); opt.zero_grad()
    if STYLE == "plain":
        log.info("step %d loss %.4f step_time %.1f ms allreduce_wait %.1f ms", step, loss.item(), compute * 1e3, wait * 1e3)
    else:  # key=value style, seconds
        log.info("step=%d loss=%.4f step_time=%.3fs allreduce_wait=%.3fs lr=%.2e", step, loss.item(), compute, wait,
                 0.05 * (1 - step / 40))
if rank == 0:
    log.info("train_runtime %.1f s, %.2f steps/s", time.time() - start, 40 / (time.time() - start))
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "straggler-slow-rank"
    if sys.argv[1:] == ["positive-2"]:
        save(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", env={"SLOW_RANK": "2", "SLOW_EXTRA": "0.3", "LOG_STYLE": "kv"}))
        sys.exit()
    save(ID, "positive-1.log", torchrun(WORKER, ["--nproc-per-node", "4", "--tee", "3"], env={"SLOW_RANK": "3"}))
    save(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", env={"SLOW_RANK": "2", "SLOW_EXTRA": "0.3", "LOG_STYLE": "kv"}))
    save(ID, "negative-1.log", torchrun(WORKER, ["--nproc-per-node", "4", "--tee", "3"]))
