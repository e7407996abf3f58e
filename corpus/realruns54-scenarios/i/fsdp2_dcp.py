"""FSDP2 (fully_shard) + torch.distributed.checkpoint scenarios on CPU/gloo."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.fsdp import fully_shard
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--mode", default="train")  # train | save | load
p.add_argument("--ckpt", default="/work/rr54/i/ck/dcp")
p.add_argument("--layers", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

def build(layers):
    m = nn.Sequential(*[nn.Sequential(nn.Linear(32, 32), nn.ReLU()) for _ in range(layers)], nn.Linear(32, 4))
    return m

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = build(args.layers)
    for blk in model[:-1]:
        fully_shard(blk)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"[rank{rank}] world={world} first weight local shard {tuple(model[0][0].weight.to_local().shape)} of {tuple(model[0][0].weight.shape)}", flush=True)
    if args.mode == "load":
        msd, osd = get_state_dict(model, opt)
        print(f"[rank{rank}] loading distributed checkpoint {args.ckpt}", flush=True)
        dcp.load({"model": msd, "optim": osd}, checkpoint_id=args.ckpt)
        set_state_dict(model, opt, model_state_dict=msd, optim_state_dict=osd)
        print(f"[rank{rank}] resumed", flush=True)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        x = torch.randn(16, 32, generator=g); y = torch.randint(0, 4, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        if args.fault == "reg_outside":
            loss = loss + 1e-4 * model[0][0].weight.pow(2).sum()  # L2 on first layer, outside forward
        loss.backward(); opt.step(); opt.zero_grad()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    if args.mode == "save":
        msd, osd = get_state_dict(model, opt)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=args.ckpt)
        print(f"[rank{rank}] saved distributed checkpoint to {args.ckpt}", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
