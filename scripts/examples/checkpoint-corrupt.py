"""Regenerate real examples for checkpoint-corrupt (CPU, torch.save / torch.load, torchrun + gloo).

positive-1.log: 2 ranks under `torchrun --standalone --tee 3` resume from a checkpoint whose copy was cut off
    half way (preempted rsync): "PytorchStreamReader failed reading zip archive: failed finding central
    directory" on every rank.
positive-2.log: single process; the repo was cloned without git-lfs, so the weights file is a 130-byte LFS
    pointer; the loader passes weights_only=False: "_pickle.UnpicklingError: invalid load key, 'v'."
positive-3.log: single process; a zero-byte file left by a job killed while saving; default torch.load:
    a bare "EOFError" out of _legacy_load.
negative-1.log: a *valid* checkpoint that holds an argparse.Namespace, refused by weights_only=True
    (torch-load-weights-only, not corruption).

Run: .venv/bin/python scripts/examples/checkpoint-corrupt.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "checkpoint-corrupt"

PREPARE = r'''
import argparse, os, torch
os.makedirs("output/run3", exist_ok=True)
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.AdamW(model.parameters())
model(torch.randn(2, 512)).sum().backward(); opt.step()
state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 12000, "args": argparse.Namespace(lr=3e-4, bs=64)}
torch.save(state, "output/run3/full.pt")
data = open("output/run3/full.pt", "rb").read()
open("output/run3/last.pt", "wb").write(data[: len(data) * 3 // 5])          # interrupted copy
open("output/run3/best.pt", "wb").close()                                   # killed while saving
os.makedirs("pretrained", exist_ok=True)
with open("pretrained/resnet50_ssl.pth", "w") as f:                         # git clone without git-lfs
    f.write("version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:5b7dd8e3c6a49ed3a2b7a1f1f0f3c2a3a9d8e06a5c1d93c4b2f8e8c3fd3e2b61\n"
            "size 102503466\n")
'''

TRAIN = r'''
import argparse, logging, os, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("runner")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))

p = argparse.ArgumentParser()
p.add_argument("--resume")
p.add_argument("--pretrained")
p.add_argument("--eval_ckpt")
p.add_argument("--weights_only", default="default")
args = p.parse_args()
if DIST:
    dist.init_process_group("gloo")
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
kw = {} if args.weights_only == "default" else {"weights_only": args.weights_only == "true"}
if args.resume:
    log.info("rank %d: resuming from %s (%.1f MB)", RANK, args.resume, os.path.getsize(args.resume) / 2**20)
    state = torch.load(args.resume, map_location="cpu", **kw)
    model.load_state_dict(state["model"])
if args.pretrained:
    log.info("loading pretrained backbone from %s", args.pretrained)
    state = torch.load(args.pretrained, map_location="cpu", **kw)
if args.eval_ckpt:
    log.info("evaluating %s", args.eval_ckpt)
    state = torch.load(args.eval_ckpt, map_location="cpu", **kw)
log.info("loaded, starting")
'''


def run_prepared(cmd, project):
    return run_cleaned({"prepare.py": PREPARE, "train.py": TRAIN}, cmd, project=project, prepare="prepare.py")


if __name__ == "__main__":
    write_log(ID, "positive-1.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3", "train.py",
                                                  "--resume", "output/run3/last.pt"], "/nfs/team/asr"))
    write_log(ID, "positive-2.log", run_prepared([PY, "train.py", "--pretrained", "pretrained/resnet50_ssl.pth",
                                                  "--weights_only", "false"], "/home/dev/ssl-bench"))
    write_log(ID, "positive-3.log", run_prepared([PY, "train.py", "--eval_ckpt", "output/run3/best.pt"], "/nfs/team/asr"))
    write_log(ID, "negative-1.log", run_prepared([PY, "train.py", "--eval_ckpt", "output/run3/full.pt"], "/nfs/team/asr"))
