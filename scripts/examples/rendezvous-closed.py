#!/usr/bin/env python
"""Regenerate the examples of `rendezvous-closed` with a real two-"node" torchrun job on CPU.

Node 0 (hosts the c10d rendezvous store) runs with --max-restarts 3; node 1 runs with
--max-restarts 0. Rank 1 on node 1 fails at step 5 (a data shard that is not there); node 1's
agent has no restarts left, so it shuts down and *closes* the rendezvous. Node 0's worker loses
its peer (gloo `Connection closed by peer`), node 0's agent tries to restart the worker group,
re-enters the rendezvous and gets RendezvousClosedError.

positive-1: node 0's console only (what the user of that node sees).
negative-1: both consoles `srun --label` style: node 1's FileNotFoundError is the root cause.

    .venv/bin/python scripts/examples/rendezvous-closed.py
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
import torch, torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank()
for step in range(1, 40):
    if os.environ.get("EXAMPLE_NODE") == "1" and step == 5:
        shard = "data/train/shard-00017.bin"
        log.info("opening %s", shard)
        open(shard, "rb")
    t = torch.ones(1024) * step
    dist.all_reduce(t)
    time.sleep(0.4)
    log.info("step %d loss %.4f", step, 3.0 / step)
dist.destroy_process_group()
'''


def two_nodes() -> tuple[str, str]:
    script = write_worker(WORKER)
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
              f"127.0.0.1:{port}", "--rdzv-id", "ft-llama-0193", "--tee", "3"]
    lines: list[tuple[int, str]] = []
    lock = threading.Lock()
    procs = []

    def pump(p, node):
        for line in p.stdout:
            with lock:
                lines.append((node, line))

    for node, restarts in ((0, "3"), (1, "0")):
        p = subprocess.Popen([str(BIN / "torchrun"), *common, "--max-restarts", restarts, str(script)],
                             cwd=script.parent, env={**ENV, "EXAMPLE_NODE": str(node)},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        threading.Thread(target=pump, args=(p, node), daemon=True).start()
        time.sleep(1.5)
    for p in procs:
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
    time.sleep(0.5)
    return "".join(l for n, l in lines if n == 0), "".join(f"{n}: {l}" for n, l in lines)


if __name__ == "__main__":
    ID = "rendezvous-closed"
    node0, both = two_nodes()
    save(ID, "positive-1.log", node0)
    save(ID, "negative-1.log", both)
