#!/usr/bin/env python
"""Regenerate the real (Linux, CPU-only build) look-alikes of `nccl-backend-unavailable`.

`nccl-backend-unavailable` specializes `torch-not-compiled-with-cuda`: on Linux, "Distributed
package doesn't have NCCL built in" means a CPU-only wheel, which is the generic class. These
real runs on the CPU-only build here are therefore NEGATIVE examples of this entry (they must
diagnose to torch-not-compiled-with-cuda); the positives (Windows/macOS) are written by hand.

negative-1: the gloo group works, then `.cuda()` on a CPU-only build raises `Torch not
            compiled with CUDA enabled`.
negative-2: torchrun, 2 ranks, `init_process_group("nccl")` on a Linux CPU-only build.
negative-3: the same request through torch.multiprocessing.spawn (ProcessRaisedException form).

    .venv/bin/python scripts/examples/nccl-backend-unavailable.py
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

TORCHRUN_WORKER = r'''
import logging, os
import torch, torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
log.info("torch %s, cuda available: %s", torch.__version__, torch.cuda.is_available())
dist.init_process_group(backend="nccl")
'''

SPAWN_WORKER = r'''
import os
import torch, torch.distributed as dist, torch.multiprocessing as mp


def run(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("EXAMPLE_PORT", "12355")
    dist.init_process_group(backend="nccl", init_method="env://", world_size=world_size, rank=rank)
    print(f"rank {rank} ready", flush=True)


if __name__ == "__main__":
    print("spawning 2 training processes", flush=True)
    mp.spawn(run, args=(2,), nprocs=2, join=True)
'''

NEGATIVE = r'''
import torch, torch.distributed as dist
dist.init_process_group(backend="gloo")
print(f"rank {dist.get_rank()}: process group ready, moving model to GPU", flush=True)
model = torch.nn.Linear(16, 4).cuda()
'''

if __name__ == "__main__":
    ID = "nccl-backend-unavailable"
    save(ID, "negative-2.log", torchrun(TORCHRUN_WORKER, ["--nproc-per-node", "2", "--tee", "3"]))
    save(ID, "negative-3.log", python(SPAWN_WORKER, env={"EXAMPLE_PORT": str(free_port())}))
    save(ID, "negative-1.log", torchrun(NEGATIVE, ["--nproc-per-node", "2"]))
