"""How the example generators run their jobs and turn the console into a knowledge-base log.

Every scripts/examples/<id>.py keeps what is specific to its failure (the training code, the
command line, the story in its docstring); the running, cleaning and writing live here once,
so a fix to them reaches every generator. The generators import this module as `_runner`:
Python puts the folder of the script it runs first on sys.path.

Logs go to src/traintriage/kb/examples/<id>/<name>.log, or below $TRAINTRIAGE_EXAMPLES_OUT when
that is set (to try a generator without touching the committed examples).

The families of generators set different environments and clean differently on purpose: what
they set shows in the logs (torchrun prints an OMP_NUM_THREADS notice when it is unset, the
scratch dir or the venv paths show in tracebacks), so each helper keeps what its family did.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv"
BIN = VENV / "bin"
PY = BIN / "python"
TORCHRUN = BIN / "torchrun"
OUT_ROOT = pathlib.Path(os.environ.get("TRAINTRIAGE_EXAMPLES_OUT") or ROOT / "src/traintriage/kb/examples")

# Throwaway venv with transformers for the HF examples (kept out of .venv on purpose).
HF_VENV = pathlib.Path("/tmp/tt-hf")
HF_SITE = HF_VENV / "lib" / "python3.11" / "site-packages"
# Offline hub with an empty cache in the scratch dir: no network, nothing from the caller's cache.
HF_OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_HOME": "{tmp}/hf"}
# ... and transformers from that venv on top of the .venv's torch.
HF_ENV = {**HF_OFFLINE, "PYTHONPATH": str(HF_SITE)}


# ---- writing ----

def log_path(example_id: str, name: str) -> pathlib.Path:
    """Where <example_id>/<name> goes (its folder created)."""
    path = OUT_ROOT / example_id / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_log(example_id: str, name: str, text: str, returncode: int | None = None) -> pathlib.Path:
    """Write one example log and say so (with the job's exit code when given)."""
    path = log_path(example_id, name)
    path.write_text(text)
    rc = "" if returncode is None else f", exit {returncode}"
    print(f"wrote {path} ({len(text.splitlines())} lines{rc})")
    return path


# ---- running ----

@dataclass
class Result:
    output: str      # stdout and stderr interleaved, as on the user's console
    returncode: int
    workdir: str     # the scratch dir the job ran in, for the cleaners to rewrite


def free_port() -> int:
    """A port nothing listens on, so concurrent or leftover jobs do not collide."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _scratch(workdir: str | pathlib.Path | None, prefix: str | None) -> Iterator[str]:
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            yield tmp
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        yield str(workdir)


def run(cmd: Sequence[object], *, files: Mapping[str, str] | None = None,
        env: Mapping[str, str | None] | None = None, setup: Callable[[pathlib.Path], object] | None = None,
        prefix: str | None = None, workdir: str | pathlib.Path | None = None, timeout: int = 300) -> Result:
    """Run `cmd` in a fresh scratch dir holding `files` ({relative path: text}).

    A scratch dir per job keeps runs independent and gives the cleaners one path to rewrite.
    `env` is laid over os.environ (None removes a variable); "{tmp}" in `cmd` and in `env`
    values stands for the scratch dir. `setup(dir)` runs once the files are written (build a
    stub library, make a symlink). `workdir` replaces the temporary dir with a fixed one
    (emptied first) for jobs whose path should be the same in every regenerated log.
    """
    with _scratch(workdir, prefix) as tmp:
        for name, text in (files or {}).items():
            path = pathlib.Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if setup is not None:
            setup(pathlib.Path(tmp))
        full_env = dict(os.environ)
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value.replace("{tmp}", tmp)
        proc = subprocess.run([str(c).replace("{tmp}", tmp) for c in cmd], cwd=tmp, env=full_env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
    return Result(proc.stdout, proc.returncode, tmp)


def run_logged(example_id: str, name: str, cmd: Sequence[object], *, files: Mapping[str, str],
               env: Mapping[str, str | None] | None = None,
               setup: Callable[[pathlib.Path], object] | None = None, timeout: int = 300) -> Result:
    """run() with OMP_NUM_THREADS=1 and write the console unchanged: the plain generators."""
    result = run(cmd, files=files, env={"OMP_NUM_THREADS": "1", **(env or {})}, setup=setup, timeout=timeout)
    write_log(example_id, name, result.output, result.returncode)
    return result


def ensure_hf_venv() -> None:
    """Create the throwaway transformers venv the first time an HF example needs it."""
    if not (HF_VENV / "bin" / "python").exists():
        subprocess.run(["python3", "-m", "venv", str(HF_VENV)], check=True)
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "transformers==5.24.0"],
                       check=True)


# ---- cleaning ----

# The CPU-only torch of this venv warns at import that NumPy is missing: a fact about this
# machine, not about the failure, so those lines never go into an example.
NUMPY_NOISE = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def drop_noise(text: str) -> str:
    """Remove the NumPy import warnings, leaving every other line (and its line end) as it was."""
    return "".join(line for line in text.splitlines(keepends=True) if not NUMPY_NOISE.search(line))


def _lines(text: str) -> str:
    return "\n".join(text.splitlines()) + "\n"


def clean_console(text: str, workdir: str, project: str) -> str:
    """The scratch dir becomes the user's project dir and torchelastic's random run dir a fixed
    name, so a regenerated log differs from the last one only where the run really did."""
    text = _lines(drop_noise(text.replace(workdir, project)))
    return re.sub(r"/tmp/torchelastic_[a-z0-9_]+", "/tmp/torchelastic_run", text)


def clean_conda(text: str, workdir: str, project: str) -> str:
    """Drop the NumPy noise, show the interpreter paths as a typical conda image would and the
    scratch dir as the user's project dir, so the examples read like a user's log rather than
    this machine's."""
    # torch's worker signal handlers write their banner including the C string's NUL byte;
    # keep the log plain text.
    text = _lines(drop_noise(text.replace("\x00", "")))
    text = text.replace(str(VENV / "lib"), "/opt/conda/lib").replace(str(VENV / "bin"), "/opt/conda/bin")
    text = text.replace(os.path.dirname(os.__file__), "/opt/conda/lib/python3.11")
    return text.replace(workdir, project)


def drop_injected_frame(text: str) -> str:
    """Remove the two traceback lines of a frame the generator injected into train.py to raise
    what torch raises from C++ (libshm, no Python frame there on a real run)."""
    out, skip = [], 0
    for ln in text.splitlines():
        if skip:
            skip -= 1
            continue
        if "in _new_using_fd_cpu" in ln and "train.py" in ln:
            skip = 1
            continue
        out.append(ln)
    return "\n".join(out) + "\n"


# ---- the families of generators ----

def self_runner(example_id: str, script: str) -> Callable[..., str]:
    """For generators that re-execute their own file as the user's train.py (TT_MODE=<mode>).

    The copy runs from /tmp/tt-job/<id>/train.py, a fixed path, so tracebacks name the same
    file on every regeneration. Returns run(name, mode, nproc=0, env=None): plain python, or
    torchrun --tee=3 with `nproc` ranks on a free port.
    """
    source = pathlib.Path(script).read_text()

    def run_self(name: str, mode: str, nproc: int = 0, env: Mapping[str, str] | None = None) -> str:
        if nproc:
            cmd = [TORCHRUN, f"--nproc-per-node={nproc}", "--tee=3", f"--master-port={free_port()}", "train.py"]
        else:
            cmd = [PY, "train.py"]
        result = run(cmd, files={"train.py": source}, workdir=pathlib.Path("/tmp/tt-job") / example_id,
                     env={"TT_MODE": mode, "PYTHONUNBUFFERED": "1", **(env or {})}, timeout=600)
        text = drop_noise(result.output)
        write_log(example_id, name, text, result.returncode)
        return text

    return run_self


# The simulated-GPU-error generators have always run with Python warnings off.
QUIET_ENV = {"PYTHONWARNINGS": "ignore", "PYTHONUNBUFFERED": "1"}


def torchrun_example(example_id: str, worker: str, *, port: int, project: str,
                     name: str = "positive-1.log", script: str = "train.py") -> None:
    """A 2-rank `torchrun` of `worker` (the generators whose rank raises a GPU error's exact
    text on this CPU machine); the console is cleaned with clean_console and saved."""
    result = run([TORCHRUN, "--nproc_per_node", "2", "--master_port", str(port), f"{{tmp}}/{script}"],
                 files={script: worker}, env=QUIET_ENV, prefix="tt-example-")
    write_log(example_id, name, clean_console(result.output, result.workdir, project), result.returncode)


def run_cleaned(files: Mapping[str, str], cmd: Sequence[object], *, project: str = "/workspace/train",
                env: Mapping[str, str | None] | None = None, prepare: str | None = None,
                setup: Callable[[pathlib.Path], object] | None = None, timeout: int = 300) -> str:
    """run() and clean_conda(): the data/checkpoint/file-system generators.

    The scratch dir is made 755 (the permission examples run as another user). `prepare`
    names one of `files` that is run first (quietly, must succeed) to create the job's inputs.
    """
    def _setup(tmp: pathlib.Path) -> None:
        os.chmod(tmp, 0o755)
        if prepare:
            subprocess.run([str(PY), prepare], cwd=tmp, check=True, capture_output=True)
        if setup is not None:
            setup(tmp)

    result = run(cmd, files=files, env={"PYTHONUNBUFFERED": "1", **(env or {})}, setup=_setup,
                 prefix="ttex-", timeout=timeout)
    return clean_conda(result.output, result.workdir, project)


# ---- launchers other than a single torchrun (srun, mpirun, pdsh, two nodes) ----

LAUNCH_ENV = {"PYTHONWARNINGS": "ignore:Failed to initialize NumPy", "PYTHONUNBUFFERED": "1"}


def launch_env(*extra: Mapping[str, str] | None) -> dict[str, str]:
    """os.environ with LAUNCH_ENV and the given overrides (for the Popen-based launchers)."""
    env = {**os.environ, **LAUNCH_ENV}
    for e in extra:
        env.update(e or {})
    return env


def write_worker(src: str, name: str = "train.py") -> pathlib.Path:
    """Write `src` into a new /tmp/job-* dir (left in place) and return the script's path."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="job-"))
    p = d / name
    p.write_text(src)
    return p


def torchrun_console(src: str, args: Sequence[str], env: Mapping[str, str] | None = None,
                     timeout: int = 90) -> str:
    """Run `torchrun ARGS train.py` and return its console (stdout+stderr interleaved)."""
    return run([TORCHRUN, *args, "{tmp}/train.py"], files={"train.py": src}, env={**LAUNCH_ENV, **(env or {})},
               prefix="job-", timeout=timeout).output


def python_console(src: str, env: Mapping[str, str] | None = None, timeout: int = 60) -> str:
    """Run the worker as a plain `python train.py` (no launcher)."""
    return run([PY, "{tmp}/train.py"], files={"train.py": src}, env={**LAUNCH_ENV, **(env or {})},
               prefix="job-", timeout=timeout).output


def labeled(src: str, world: int, prefix: str, env: Mapping[str, str] | None = None, timeout: int = 90,
            per_rank_env: Mapping[int, Mapping[str, str]] | None = None, epilogue: str = "",
            dist_env: bool = True) -> str:
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
        e = launch_env(env, {"SLURM_PROCID": str(r), "SLURM_LOCALID": str(r % 2), "SLURM_NTASKS": str(world)})
        if dist_env:  # what torchrun / a correct sbatch script exports; srun alone does not
            e.update(RANK=str(r), LOCAL_RANK=str(r % 2), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE="2",
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        e.update((per_rank_env or {}).get(r, {}))
        p = subprocess.Popen([str(PY), str(script)], cwd=script.parent, env=e,
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


def two_nodes(src: str, rdzv_id: str, *, env: Mapping[str, str] | None = None,
              node_env: Mapping[int, Mapping[str, str]] | None = None,
              node_args: Mapping[int, Sequence[str]] | None = None, stagger: float = 1.0,
              kill_node0_after: float | None = None) -> list[tuple[int, str]]:
    """Two one-rank torchrun agents ("node 0" and "node 1") on one c10d rendezvous, node 0
    started first so it hosts the store. Returns (node, line) pairs in arrival order; see
    node_console() and srun_labelled()."""
    script = write_worker(src)
    port = free_port()
    args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
            f"127.0.0.1:{port}", "--rdzv-id", rdzv_id, "--tee", "3"]
    lines: list[tuple[int, str]] = []
    lock = threading.Lock()
    procs = []

    def pump(p, node):
        for line in p.stdout:
            with lock:
                lines.append((node, line))

    for node in (0, 1):
        cmd = [str(TORCHRUN), *args, *(node_args or {}).get(node, ()), str(script)]
        p = subprocess.Popen(cmd, cwd=script.parent, env=launch_env(env, (node_env or {}).get(node)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        threading.Thread(target=pump, args=(p, node), daemon=True).start()
        time.sleep(stagger)
    if kill_node0_after:
        time.sleep(kill_node0_after)
        procs[0].kill()
    for p in procs:
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
    time.sleep(0.5)
    return lines


def node_console(lines: list[tuple[int, str]], node: int) -> str:
    """What the user of one node sees: that node's console only."""
    return "".join(line for n, line in lines if n == node)


def srun_labelled(lines: list[tuple[int, str]]) -> str:
    """Both nodes' consoles in one log, `srun --label` style."""
    return "".join(f"{n}: {line}" for n, line in lines)


# ---- a healthy job whose launcher is signalled (SIGHUP/SIGTERM, SLURM time limit, preemption) ----

SIGNALLED_TRAIN = r'''
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


def run_signalled(example_id: str, name: str, args: Sequence[str], mode: str, sig: int, target: str,
                  label: str = "", inject: str = "") -> None:
    """Run SIGNALLED_TRAIN under `torchrun ARGS` (mode "plain" or "handle": the script's own
    SIGTERM handler), and once rank 0 logged step 8 send `sig` to the torchrun agent
    (target "agent") or to every worker ("workers"). `label` prefixes every line (srun
    --label); `inject` ({now}: the time) is added as the scheduler's line when the signal goes.
    """
    os.makedirs("/tmp/ckpt", exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / "train.py"
        script.write_text(SIGNALLED_TRAIN)
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
        while not any(" 8/199" in line for line in lines):
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
    write_log(example_id, name, "".join(lines), proc.returncode)


RAISING_DDP_WORKER = r'''
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
{record_import}

{constants}

class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor, step: int) -> torch.Tensor:
        if dist.get_rank() == FAIL_RANK and step == FAIL_STEP:
            # What the CUDA/cuBLAS/cuDNN check raises on the GPU at this point.
            raise EXC(ERROR)
        return torch.relu(self.proj(x))


{record}
def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Block())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
{init_failure}
    for step in range(1, {steps} + 1):
        x = torch.randn(32, 64)
        loss = model(x, step).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if rank == 0 and step % {every} == 0:
            {progress}
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''
"""A 2-rank DDP job whose FAIL_RANK raises EXC(ERROR) at FAIL_STEP (or, with `fail_at_init`, right
after setup): the exact text a GPU error prints, raised on this CPU machine."""

# How training logs its progress: plain step lines, HF Trainer dicts, Megatron iteration lines.
STEP_LINE = 'print(f"step {step}/{40} | loss {loss.item():.4f} | lr 3.0e-04 | grad_norm {1.0 + step / 100:.3f}", flush=True)'
HF_TRAINER_LINE = (
    "print(f\"{{'loss': {loss.item():.4f}, 'grad_norm': {0.9 + step / 50:.4f}, 'learning_rate': 2e-05, "
    "'epoch': {step / 40:.2f}}}\", flush=True)"
)
MEGATRON_LINE = (
    'print(f" iteration {step:8d}/   50000 | consumed samples: {step * 256:12d} | elapsed time per iteration (ms): '
    "812.4 | learning rate: 1.500E-04 | global batch size:   256 | lm loss: {loss.item():.6E} | loss scale: 1.0 | "
    'grad norm: 0.912 | number of skipped iterations:   0 | number of nan iterations:   0 |", flush=True)'
)
_INIT_FAILURE = """    if FAIL_RANK < 0 or rank == FAIL_RANK:
        torch.zeros(1)  # model.to(device) / torch.cuda.set_device(local_rank) happens here on a GPU node
        raise EXC(ERROR)
"""


def raising_ddp_worker(
    constants: str,
    *,
    record: bool = True,
    fail_at_init: bool = False,
    steps: int = 40,
    every: int = 5,
    progress: str = STEP_LINE,
) -> str:
    """The worker program for one simulated GPU error: the four constants verbatim; whether
    torchrun's @record wraps main; whether the failure comes right after setup (every rank when
    FAIL_RANK < 0) instead of at FAIL_STEP; and how many steps run and how progress is logged."""
    pieces = {
        "{record_import}": "from torch.distributed.elastic.multiprocessing.errors import record" if record else "",
        "{record}": "@record" if record else "",
        "{init_failure}": _INIT_FAILURE if fail_at_init else "",
        "{steps}": str(steps),
        "{every}": str(every),
        "{progress}": progress,
        "{constants}": constants.strip("\n") + "\n",
    }
    program = RAISING_DDP_WORKER
    for placeholder, text in pieces.items():
        program = program.replace(placeholder, text)
    return program
