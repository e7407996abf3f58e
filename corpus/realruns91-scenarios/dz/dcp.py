"""DDP training with torch.distributed.checkpoint (DCP) save / resume.

The dataloader position is stored per data-parallel rank (key dataloader.dp_rank_<r>), as
several training frameworks do. --resume loads the newest step_* folder in --ckpt-dir.
"""
import argparse, os, glob, time, warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--ckpt-dir", required=True)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--resume", action="store_true")
args = p.parse_args()


class Loader:
    def __init__(self, rank, world):
        self.rank, self.world, self.pos = rank, world, 0

    def state_dict(self):
        return {"pos": torch.tensor(self.pos), "world": torch.tensor(self.world)}

    def load_state_dict(self, sd):
        self.pos = int(sd["pos"])

    def next(self):
        g = torch.Generator().manual_seed(self.pos * self.world + self.rank)
        self.pos += 1
        x = torch.randn(32, 16, generator=g)
        return x, (x.sum(1, keepdim=True) > 0).float()


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    ddp = DDP(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = Loader(rank, world)
    start = 0
    if args.resume:
        last = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*")))[-1]
        if rank == 0:
            print(f"resuming from {last} with world_size={world}", flush=True)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "dataloader": {f"dp_rank_{rank}": loader.state_dict()},
                 "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=last)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        loader.load_state_dict(state["dataloader"][f"dp_rank_{rank}"])
        start = int(state["step"])
        print(f"[rank {rank}] restored step={start} loader.pos={loader.pos}", flush=True)
    for step in range(start, start + args.steps):
        x, y = loader.next()
        loss = F.binary_cross_entropy_with_logits(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if (step + 1) % args.save_every == 0:
            msd, osd = get_state_dict(model, opt)
            state = {"model": msd, "optim": osd, "dataloader": {f"dp_rank_{rank}": loader.state_dict()},
                     "step": torch.tensor(step + 1)}
            path = os.path.join(args.ckpt_dir, f"step_{step+1:06d}")
            dcp.save(state, checkpoint_id=path)
            if rank == 0:
                print(f"saved DCP checkpoint {path}", flush=True)
    dist.destroy_process_group()
    print(f"[rank {rank}] done", flush=True)


if __name__ == "__main__":
    main()
