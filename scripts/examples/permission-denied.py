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
import sys

from _runner import VENV, run_cleaned, write_log

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


# /root (and the pyenv interpreter behind .venv) is not traversable by uid 65534: run the
# system interpreter on the venv's site-packages instead.
NOBODY_ENV = {"HOME": "/root", "PYTHONPATH": str(VENV / "lib" / "python3.11" / "site-packages")}
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def run_as_nobody(cmd, project, writable=()):
    """run_cleaned() as uid 65534 in the root-owned (755) scratch dir, the given subdirs made world-writable."""
    def setup(tmp):
        for d in ("outputs/run1", "shared/dashboard", *writable):
            path = tmp / d
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777 if d in writable else 0o755)
    return run_cleaned({"train.py": TRAIN}, [*AS_NOBODY, *cmd], project=project, env=NOBODY_ENV, setup=setup)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root: the example needs to drop privileges to uid 65534")
    write_log(ID, "positive-1.log", run_as_nobody([SYSPY, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "--tee", "3", "train.py",
                                                   "--output_dir", "outputs/run1"], "/mnt/shared/llm"))
    write_log(ID, "positive-2.log", run_as_nobody([SYSPY, "train.py", "--output_dir", "outputs/run1", "--save_mode", "file",
                                                   "--save_steps", "25"], "/mnt/shared/llm"))
    write_log(ID, "positive-3.log", run_as_nobody([SYSPY, "train.py", "--hub_cache"], "/mnt/shared/llm"))
    write_log(ID, "negative-1.log", run_as_nobody([SYSPY, "train.py", "--output_dir", "scratch/run1", "--metrics_snapshot",
                                                   "shared/dashboard/metrics.json"], "/mnt/shared/llm",
                                                  writable=("scratch/run1",)))
