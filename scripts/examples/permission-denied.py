"""Regenerate real examples for permission-denied (CPU, run as an unprivileged user, torchrun + gloo).

The scripts run as uid/gid 65534 (nobody) against directories owned by root with mode 755: the usual
situation of a container user writing into a mount prepared by someone else.
positive-1.log: 2 ranks under `python -m torch.distributed.run --standalone --tee 3`; rank 0 cannot create the checkpoint
    directory at step 20 ("PermissionError: [Errno 13] Permission denied: '.../checkpoint-20'"),
    rank 1 then loses its peer; ChildFailedError report.
positive-2.log: single process; torch.save() straight into a root-owned directory: torch's C++ writer
    reports "[enforce fail at inline_container.cc:...] . open file failed with strerror: Permission denied".
positive-3.log: single process; HOME still points at /root, so creating the torch hub cache fails.
negative-1.log: a healthy run that cannot write an optional metrics snapshot, logs the PermissionError as a
    warning and finishes.

Run (as root): .venv/bin/python scripts/examples/permission-denied.py
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
TORCHRUN = VENV / "bin" / "torchrun"
KB_EXAMPLES = ROOT / "src" / "traintriage" / "kb" / "examples"

# This machine's torch build has no NumPy; drop its import-time warning, and show the
# interpreter paths as a typical conda image would so the examples read like a user's log.
_DROP = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def clean(text: str, workdir: str, project: str = "/workspace/train") -> str:
    # torch's worker signal handlers write their banner including the C string's NUL byte;
    # keep the log plain text.
    text = text.replace("\x00", "")
    lines = [ln for ln in text.splitlines() if not _DROP.search(ln)]
    text = "\n".join(lines) + "\n"
    text = text.replace(str(VENV / "lib"), "/opt/conda/lib").replace(str(VENV / "bin"), "/opt/conda/bin")
    text = text.replace(os.path.dirname(os.__file__), "/opt/conda/lib/python3.11")
    return text.replace(workdir, project)


def run(files: dict[str, str], cmd: list[str], *, env: dict[str, str] | None = None,
        project: str = "/workspace/train", timeout: int = 300, preexec=None) -> str:
    """Write `files` into a scratch dir, run `cmd` there, return the cleaned console output."""
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        os.chmod(tmp, 0o755)
        for name, body in files.items():
            path = pathlib.Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        proc = subprocess.run([str(c) for c in cmd], cwd=tmp, env=full_env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, preexec_fn=preexec)
        return clean(proc.stdout, tmp, project)


def write(entry_id: str, name: str, text: str) -> None:
    out = KB_EXAMPLES / entry_id / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{out.relative_to(ROOT)}: {len(text.splitlines())} lines")

ID = "permission-denied"
SYSPY = "/usr/bin/python3.11"

TRAIN = r'''
import argparse, json, logging, os, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="[%(asctime)s] [%(levelname)s] [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("trainer")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--output_dir", default="outputs/run1")
    p.add_argument("--save_steps", type=int, default=20)
    p.add_argument("--max_steps", type=int, default=40)
    p.add_argument("--save_mode", default="dirs")
    p.add_argument("--metrics_snapshot")
    p.add_argument("--hub_cache", action="store_true")
    args = p.parse_args()
    if DIST:
        dist.init_process_group("gloo")
    log.info("output_dir=%s save_steps=%d max_steps=%d", args.output_dir, args.save_steps, args.max_steps)
    if args.hub_cache:
        hub_dir = torch.hub.get_dir()
        log.info("caching pretrained backbone under %s", hub_dir)
        os.makedirs(os.path.join(hub_dir, "checkpoints"), exist_ok=True)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    if DIST:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    for step in range(1, args.max_steps + 1):
        x = torch.randn(32, 64)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if RANK == 0 and step % 5 == 0:
            log.info("{'loss': %.4f, 'learning_rate': 0.0002, 'step': %d}", loss.item(), step)
        if step % args.save_steps == 0:
            if RANK == 0:
                if args.save_mode == "dirs":
                    ckpt = os.path.join(args.output_dir, f"checkpoint-{step}")
                    log.info("Saving model checkpoint to %s", ckpt)
                    os.makedirs(ckpt, exist_ok=True)
                    torch.save(model.state_dict(), os.path.join(ckpt, "model.pt"))
                else:
                    path = os.path.join(args.output_dir, f"step_{step:06d}.pt")
                    log.info("Saving model checkpoint to %s", path)
                    torch.save(model.state_dict(), path)
                if args.metrics_snapshot:
                    try:
                        with open(args.metrics_snapshot, "w") as f:
                            json.dump({"step": step, "loss": loss.item()}, f)
                    except PermissionError as e:
                        log.warning("could not write metrics snapshot (%s); continuing", e)
            if DIST:
                dist.barrier()
    log.info("training complete")


if __name__ == "__main__":
    main()
'''


def run_as_nobody(cmd, project, writable=()):
    """Like run(), but the scratch dir is root-owned (755) with the given subdirs made world-writable."""
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        os.chmod(tmp, 0o755)
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        for d in ("outputs/run1", "shared/dashboard", *writable):
            path = pathlib.Path(tmp) / d
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777 if d in writable else 0o755)
        # /root (and the pyenv interpreter behind .venv) is not traversable by uid 65534: run the
        # system interpreter on the venv's site-packages instead.
        env = dict(os.environ, PYTHONUNBUFFERED="1", HOME="/root", PYTHONPATH=str(VENV / "lib" / "python3.11" / "site-packages"))
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        proc = subprocess.run(drop + [str(c) for c in cmd], cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        return clean(proc.stdout, tmp, project)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root: the example needs to drop privileges to uid 65534")
    write(ID, "positive-1.log", run_as_nobody([SYSPY, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "--tee", "3", "train.py",
                                               "--output_dir", "outputs/run1"], "/mnt/shared/llm"))
    write(ID, "positive-2.log", run_as_nobody([SYSPY, "train.py", "--output_dir", "outputs/run1", "--save_mode", "file",
                                               "--save_steps", "25"], "/mnt/shared/llm"))
    write(ID, "positive-3.log", run_as_nobody([SYSPY, "train.py", "--hub_cache"], "/mnt/shared/llm"))
    write(ID, "negative-1.log", run_as_nobody([SYSPY, "train.py", "--output_dir", "scratch/run1", "--metrics_snapshot",
                                               "shared/dashboard/metrics.json"], "/mnt/shared/llm",
                                              writable=("scratch/run1",)))
