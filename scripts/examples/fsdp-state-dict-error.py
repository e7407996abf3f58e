"""Regenerate real examples for fsdp-state-dict-error (CPU, torchrun + gloo, FSDP1).

positive-1.log: resume: a full (unwrapped, consolidated) checkpoint is loaded into an
                FSDP model while state_dict_type is SHARDED_STATE_DICT
                (AssertionError: Expected ShardedTensor, got <class 'torch.Tensor'>).
positive-2.log: the same resume mistake on 4 ranks under `torchrun --tee 3`.
positive-4.log:     export: a SHARDED_STATE_DICT taken from the FSDP model is loaded into a
                plain nn.Module for inference ("... has no attribute 'local_shards'"), 2 ranks.
                Kept as a known miss: the generic "Error(s) in loading state_dict for"
                line (state-dict-mismatch) comes first in the same exception message.
negative-1.log: the correct pattern (FULL_STATE_DICT with rank0_only=True (on GPU also offload_to_cpu=True;
                this CPU run needs no offload), saved on rank 0: the run finishes and prints only
                FSDP's deprecation warning for FSDP.state_dict_type().

Run: .venv/bin/python scripts/examples/fsdp-state-dict-error.py
"""

from __future__ import annotations

import os

from _runner import TORCHRUN, run_logged

ID = "fsdp-state-dict-error"

TRAIN = r'''
import os, sys, time
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import (FullyShardedDataParallel as FSDP, StateDictType,
                                    FullStateDictConfig)

MODE = sys.argv[1]   # "resume-full-into-sharded" | "sharded-into-plain" | "ok"
CKPT = sys.argv[2]

def make():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = FSDP(make(), device_id=torch.device("cpu"))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
if MODE == "resume-full-into-sharded":
    if rank == 0:
        torch.save(make().state_dict(), CKPT)
    dist.barrier()
    print(f"[rank {rank}] resuming from {CKPT}", flush=True)
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        model.load_state_dict(torch.load(CKPT))
for step in range(1, 4):
    loss = model(torch.randn(16, 32)).pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad()
    if rank == 0:
        print(f"epoch 0 | step {step} | loss {loss.item():.4f}", flush=True)
    time.sleep(0.1)
if MODE == "sharded-into-plain":
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        sd = model.state_dict()
    print(f"[rank {rank}] exporting weights for inference", flush=True)
    plain = make()
    plain.load_state_dict(sd)
if MODE == "ok":
    cfg = FullStateDictConfig(offload_to_cpu=False, rank0_only=True)  # on GPU: offload_to_cpu=True
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        sd = model.state_dict()
    if rank == 0:
        torch.save(sd, CKPT)
        print(f"saved consolidated checkpoint to {CKPT} ({len(sd)} tensors)", flush=True)
dist.barrier()
dist.destroy_process_group()
'''


def run(args: list[str], mode: str, name: str) -> None:
    ckpt = "/tmp/ckpt/model_full.pt" if mode != "ok" else "/tmp/ckpt/final.pt"
    os.makedirs("/tmp/ckpt", exist_ok=True)
    run_logged(ID, name, [TORCHRUN, *args, "{tmp}/train.py", mode, ckpt], files={"train.py": TRAIN})


if __name__ == "__main__":
    run(["--nproc-per-node", "2", "--master-port", "29681"], "resume-full-into-sharded", "positive-1.log")
    run(["--nproc-per-node", "4", "--master-port", "29682", "--tee", "3"], "resume-full-into-sharded",
        "positive-2.log")
    run(["--nproc-per-node", "2", "--master-port", "29684"], "sharded-into-plain", "positive-4.log")
    run(["--nproc-per-node", "2", "--master-port", "29683"], "ok", "negative-1.log")
