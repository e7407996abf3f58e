"""Train a small MLP with periodic checkpoints and resume support (torchrun/mp.spawn/plain python)."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train", choices=["train", "eval"])
p.add_argument("--save", default="")
p.add_argument("--resume", default="")
p.add_argument("--resume-optional", action="store_true")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--extra-head", action="store_true")
p.add_argument("--save-args", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29549)
args = p.parse_args()

class Net(nn.Module):
    def __init__(self, extra=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 4)
        self.extra = nn.Linear(32, 2) if extra else None
    def forward(self, x):
        h = self.body(x)
        out = self.head(h)
        if self.extra is not None:
            out = out + self.extra(h).sum(-1, keepdim=True)
        return out

def worker(rank=None, world=None):
    if rank is not None:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    elif "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    distributed = dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(0)
    model = Net(extra=args.extra_head)
    if args.mode == "eval":
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
        model.eval()
        with torch.no_grad():
            print("eval loss", F.cross_entropy(model(torch.randn(64, 16)), torch.randint(0, 4, (64,))).item())
        return
    if distributed:
        model = DDP(model)
    if args.extra_head:
        core = model.module if distributed else model
        opt = torch.optim.AdamW([{"params": core.body.parameters()}, {"params": core.head.parameters()},
                                 {"params": core.extra.parameters(), "lr": 1e-2}], lr=1e-3)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if args.resume:
        print(f"[rank{rank}] resuming from {args.resume}", flush=True)
        try:
            ckpt = torch.load(args.resume, map_location="cpu")
        except FileNotFoundError:
            if not args.resume_optional:
                raise
            import traceback; traceback.print_exc()
            print(f"[rank{rank}] no checkpoint at {args.resume}, starting from scratch", flush=True)
            ckpt = None
    if args.resume and ckpt is not None:
        (model.module if distributed else model).load_state_dict(ckpt["model"], strict=False)
        opt.load_state_dict(ckpt["optim"])
        start = ckpt["step"] + 1
    for step in range(start, start + args.steps):
        x = torch.randn(16, 16); y = torch.randint(0, 4, (16,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    if args.save and rank == 0:
        ck = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step}
        if args.save_args:
            ck["args"] = args
        os.makedirs(os.path.dirname(args.save) or ".", exist_ok=True)
        torch.save(ck, args.save)
        print(f"saved checkpoint to {args.save}", flush=True)
    if distributed:
        dist.barrier(); dist.destroy_process_group()

def entry(r, w):
    worker(r, w)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        worker()
