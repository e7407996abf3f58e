#!/usr/bin/env python
"""Regenerate the examples of `rendezvous-timeout` with real runs on CPU (short timeouts).

positive-1: torchrun --nnodes 2 static rendezvous, only node 0 started: the agent's TCPStore
            server waits for the second node and gives up (DistStoreError: Timed out after
            ... waiting for clients. 1/2 clients joined).
positive-2: torchrun --nnodes 2 --node-rank 1 pointed at a master that is not there: the
            client socket times out connecting (DistNetworkError).
positive-3: torchrun c10d rendezvous with --nnodes 2 and one node: RendezvousTimeoutError.
positive-4: srun --label, 2 tasks while WORLD_SIZE=4 is exported: rank 0's in-process store
            waits for ranks 2-3 that were never launched.
negative-1: a rendezvous that completes after a slow node joins, then trains normally.

    .venv/bin/python scripts/examples/rendezvous-timeout.py
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
import datetime, logging, os, time
import torch, torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
log.info("rank %s/%s connecting to %s:%s", os.environ["RANK"], os.environ["WORLD_SIZE"],
         os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "1800"))))
rank = dist.get_rank()
for step in range(1, 4):
    t = torch.ones(4) * rank
    dist.all_reduce(t)
    log.info("step %d loss %.4f", step, 2.0 / step)
dist.destroy_process_group()
'''


def late_master(port: int) -> str:
    """Node 1 starts first and retries its store connection; node 0 arrives 14 s later and the
    job trains normally. Returns node 1's console (the retry warnings, then healthy steps)."""
    script = write_worker(WORKER)
    args = ["--nnodes", "2", "--nproc-per-node", "2", "--tee", "3", "--master-addr", "127.0.0.1",
            "--master-port", str(port), "--rdzv-conf", "timeout=10"]
    node1 = subprocess.Popen([str(BIN / "torchrun"), *args, "--node-rank", "1", str(script)], cwd=script.parent,
                             env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(14)
    node0 = subprocess.Popen([str(BIN / "torchrun"), *args, "--node-rank", "0", str(script)], cwd=script.parent,
                             env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, _ = node1.communicate(timeout=120)
    node0.wait(timeout=60)
    return out


if __name__ == "__main__":
    ID = "rendezvous-timeout"
    if sys.argv[1:] == ["negative"]:
        save(ID, "negative-1.log", late_master(free_port()))
        sys.exit()
    port = free_port()
    common = ["--nproc-per-node", "2", "--tee", "3", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    save(ID, "positive-1.log", torchrun(WORKER, ["--nnodes", "2", "--node-rank", "0", "--rdzv-conf", "timeout=20", *common]))
    save(ID, "positive-2.log", torchrun(WORKER, ["--nnodes", "2", "--node-rank", "1", "--rdzv-conf", "timeout=20", *common]))
    save(ID, "positive-3.log", torchrun(WORKER, ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                                                 "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", "job-4417",
                                                 "--rdzv-conf", "join_timeout=20"]))
    save(ID, "positive-4.log", labeled(WORKER, 2, "{rank}: ", env={"PG_TIMEOUT": "20"},
                                       per_rank_env={0: {"WORLD_SIZE": "4"}, 1: {"WORLD_SIZE": "4"}},
                                       epilogue=SRUN_EPILOGUE))
    save(ID, "negative-1.log", late_master(free_port()))
