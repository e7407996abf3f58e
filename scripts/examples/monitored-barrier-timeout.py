#!/usr/bin/env python
"""Regenerate the examples of `monitored-barrier-timeout` with real gloo jobs on CPU.

`torch.distributed.monitored_barrier()` (gloo only) makes rank 0 collect an ack from every
other rank within a timeout and name the ranks that did not arrive. Here one rank is stuck
(a blocked lock standing in for a hung data read) when the others reach the barrier.

positive-1: torchrun --tee 3, 4 ranks, rank 3 stuck; wait_all_ranks=False (first missing rank).
positive-2: srun --label, 4 ranks, ranks 1 and 2 stuck, wait_all_ranks=True (all missing ranks).
negative-1: a monitored_barrier that every rank passes, the job completes.

    .venv/bin/python scripts/examples/monitored-barrier-timeout.py
"""
# ---- launcher helpers (self-contained; each scripts/examples/*.py carries its own copy) ----
import os
import pathlib
import socket
import subprocess
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
import datetime, logging, os, sys, threading, time
import torch, torch.distributed as dist

STUCK = {int(r) for r in os.environ.get("STUCK_RANKS", "").split(",") if r}
WAIT_ALL = os.environ.get("WAIT_ALL") == "1"
logging.basicConfig(format=f"%(asctime)s [rank{os.environ['RANK']}] %(levelname)s %(name)s: %(message)s",
                    level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
lock = threading.Lock()
lock.acquire()
for epoch in range(2):
    time.sleep(0.5)
    log.info("epoch %d: training done, entering evaluation", epoch)
    if rank in STUCK and epoch == 1:
        lock.acquire()  # stuck: e.g. reading a shard from a hung mount
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=8), wait_all_ranks=WAIT_ALL)
    log.info("epoch %d: all ranks reached evaluation barrier", epoch)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "monitored-barrier-timeout"
    save(ID, "positive-1.log", torchrun(WORKER, ["--nproc-per-node", "4", "--tee", "3"], env={"STUCK_RANKS": "3"}))
    save(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", env={"STUCK_RANKS": "1,2", "WAIT_ALL": "1"},
                                       epilogue=SRUN_EPILOGUE))
    save(ID, "negative-1.log", torchrun(WORKER, ["--nproc-per-node", "4", "--tee", "3"]))
