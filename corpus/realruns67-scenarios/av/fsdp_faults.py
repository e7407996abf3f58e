"""FSDP (v1, CPU/gloo) fine-tuning of a tiny GPT-2 style model with selectable faults.

--fault none | frozen-emb (freeze embeddings, use_orig_params=False) | half-head (fp16 head)
        | sd-rank0 (full state dict gathered on rank 0 only) | save-ro (checkpoint dir read-only)
"""
import argparse
import functools
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType, FullStateDictConfig
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--offload", action="store_true")
p.add_argument("--no-device-id", action="store_true")
p.add_argument("--ckpt-dir", default="/work/rr67/av/ckpt_fsdp")
args = p.parse_args()


class Tiny(nn.Module):
    def __init__(self, vocab=128, h=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, h)
        self.l1 = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h))
        self.l2 = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h))
        self.head = nn.Linear(h, vocab)

    def forward(self, x):
        h = self.wte(x)
        h = h + self.l1(h)
        h = h + self.l2(h)
        return self.head(h)


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = Tiny()
    if args.fault == "frozen-emb":
        # "parameter-efficient" recipe: keep the embeddings frozen
        model.wte.weight.requires_grad_(False)
    if args.fault == "half-head":
        model.head.half()
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=20000)
    fsdp = FSDP(model, auto_wrap_policy=policy if args.fault != "frozen-emb" else None,
                use_orig_params=False,
                device_id=None if args.no_device_id else torch.device("cpu"))
    if rank == 0:
        print(fsdp, flush=True)
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        ids = torch.randint(0, 128, (4, 33), generator=g)
        t0 = time.time()
        logits = fsdp(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 128).float(), ids[:, 1:].reshape(-1))
        loss.backward()
        fsdp.clip_grad_norm_(1.0)
        opt.step()
        opt.zero_grad()
        print(f"rank={rank} step={step} loss={loss.item():.4f} dt={time.time() - t0:.3f}", flush=True)
    # save checkpoint
    if args.fault == "sd-rank0":
        if rank == 0:
            cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
            with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT, cfg):
                sd = fsdp.state_dict()
            torch.save(sd, os.path.join(args.ckpt_dir, "model.pt"))
        dist.barrier()
    else:
        cfg = FullStateDictConfig(offload_to_cpu=args.offload, rank0_only=True)
        with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT, cfg):
            sd = fsdp.state_dict()
        if rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            torch.save(sd, os.path.join(args.ckpt_dir, "model.pt"))
            print(f"saved {len(sd)} tensors to {args.ckpt_dir}/model.pt", flush=True)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
