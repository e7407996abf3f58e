"""2-rank FSDP (gloo, CPU) job that saves and resumes a checkpoint with the FSDP state-dict APIs."""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType, FullStateDictConfig, ShardedStateDictConfig
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.ff(self.ln(x))


class Model(nn.Module):
    def __init__(self, d=64, n=3):
        super().__init__()
        self.inp = nn.Linear(16, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return self.out(h)


def sd_ctx(model, kind, offload=True):
    if kind == "full":
        return FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT,
                                    FullStateDictConfig(offload_to_cpu=offload, rank0_only=offload))
    return FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig(offload_to_cpu=offload))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", default="fsdp_ckpt")
    p.add_argument("--save-kind", default="full", choices=["full", "sharded"])
    p.add_argument("--load-kind", default="", choices=["", "full", "sharded"])
    p.add_argument("--load-path", default="", help="explicit checkpoint file ({rank} is substituted)")
    p.add_argument("--offload", type=int, default=1, help="offload_to_cpu / rank0_only in the state-dict configs")
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = FSDP(Model(), auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"), use_orig_params=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if a.load_kind:
        if a.load_path:
            sd = torch.load(a.load_path.format(rank=rank), map_location="cpu", weights_only=False)
        elif a.load_kind == "full":
            sd = torch.load(os.path.join(a.ckpt, "model_full.pt"), map_location="cpu")
        else:
            sd = torch.load(os.path.join(a.ckpt, f"model_shard{rank}.pt"), map_location="cpu", weights_only=False)
        with sd_ctx(model, a.load_kind, bool(a.offload)):
            model.load_state_dict(sd["model"])
        start = sd["step"]
        print(f"[rank{rank}] resumed {a.load_kind} checkpoint at step {start}", flush=True)
    g = torch.Generator().manual_seed(rank)
    for step in range(start + 1, start + a.steps + 1):
        x = torch.randn(32, 16, generator=g)
        loss = nn.functional.mse_loss(model(x), x[:, :1] * 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    os.makedirs(a.ckpt, exist_ok=True)
    with sd_ctx(model, a.save_kind, bool(a.offload)):
        msd = model.state_dict()
    if a.save_kind == "full":
        if rank == 0:
            torch.save({"model": msd, "step": start + a.steps}, os.path.join(a.ckpt, "model_full.pt"))
    else:
        torch.save({"model": msd, "step": start + a.steps}, os.path.join(a.ckpt, f"model_shard{rank}.pt"))
    dist.barrier()
    if rank == 0:
        print(f"saved {a.save_kind} checkpoint to {a.ckpt}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
