#!/usr/bin/env python
"""Regenerate the examples of `store-connection-lost` with real two-"node" torchrun jobs on CPU.

Two torchrun agents join one c10d rendezvous on this machine (node 0 hosts the TCPStore,
node 1 connects to it), each running one gloo worker.

positive-1: node 0's agent is SIGKILLed mid-training (host lost / agent OOM-killed): node 1's
            console, the only log the user has, shows keep-alive failures, `Failed to recv, got 0
            bytes ... Did the remote server shutdown or crash?`, `Broken pipe` and
            RendezvousConnectionError.
negative-1: rank 0 on node 0 fails with a real error (embedding index out of range): node 0's
            agent exits and takes the store with it, so node 1 shows the same store errors, but
            the root cause is rank 0's IndexError. Both consoles, `srun --label` style.

    .venv/bin/python scripts/examples/store-connection-lost.py
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
import datetime, logging, os, time
import torch, torch.distributed as dist, torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
emb = nn.Embedding(32000, 16)
for step in range(1, 30):
    ids = torch.randint(0, 32000, (4, 8))
    if os.environ.get("EXAMPLE_MODE") == "crash-rank0" and rank == 0 and step == 6:
        ids[0, 3] = 32003  # a token id past the vocabulary
    loss = emb(ids).pow(2).mean()
    t = torch.ones(1024) * loss.detach()
    dist.all_reduce(t)
    time.sleep(0.4)
    log.info("step %d loss %.4f", step, t[0].item() / dist.get_world_size())
dist.destroy_process_group()
'''


def two_nodes(mode: str, kill_agent0_after: float | None) -> tuple[str, str]:
    """Start node 0 and node 1 agents; return (node-1 console, both consoles srun-labelled)."""
    script = write_worker(WORKER)
    port = free_port()
    args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
            f"127.0.0.1:{port}", "--rdzv-id", "pretrain-7b-0412", "--tee", "3"]
    lines: list[tuple[int, str]] = []
    lock = threading.Lock()
    procs = []

    def pump(p, node):
        for line in p.stdout:
            with lock:
                lines.append((node, line))

    for node in (0, 1):
        p = subprocess.Popen([str(BIN / "torchrun"), *args, str(script)], cwd=script.parent,
                             env={**ENV, "EXAMPLE_MODE": mode}, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        threading.Thread(target=pump, args=(p, node), daemon=True).start()
        time.sleep(1.0)  # node 0 binds the rendezvous endpoint first and hosts the store
    if kill_agent0_after:
        time.sleep(kill_agent0_after)
        procs[0].kill()
    for p in procs:
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
    time.sleep(0.5)
    node1 = "".join(l for n, l in lines if n == 1)
    both = "".join(f"{n}: {l}" for n, l in lines)
    return node1, both


if __name__ == "__main__":
    ID = "store-connection-lost"
    node1, _ = two_nodes("train", kill_agent0_after=12)
    save(ID, "positive-1.log", node1)
    _, both = two_nodes("crash-rank0", kill_agent0_after=None)
    save(ID, "negative-1.log", both)
