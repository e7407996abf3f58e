"""Small DDP training job with checkpoint save / resume, used for checkpoint-failure scenarios.

Nothing here raises on purpose: every failure comes from how the job is configured
(--hidden, --freeze-emb, --resume, directory permissions, ulimits, ...).
"""
import argparse, logging, os, sys, time, glob
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--save-dir", default=None)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--save-args", action="store_true", help="store the argparse namespace in the checkpoint")
p.add_argument("--save-wrapped", action="store_true", help="save ddp.state_dict() (module. prefix)")
p.add_argument("--per-rank-state", action="store_true", help="each rank saves its own rng/data-loader state")
p.add_argument("--resume", default=None)
p.add_argument("--resume-rank0-only", action="store_true", help="load weights on rank 0, DDP broadcasts them")
p.add_argument("--freeze-emb", action="store_true")
p.add_argument("--onecycle", action="store_true")
p.add_argument("--mmap", action="store_true", help="torch.load(..., mmap=True) to save host RAM")
p.add_argument("--legacy-format", action="store_true", help="save with _use_new_zipfile_serialization=False")
p.add_argument("--logging", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=39530)
p.add_argument("--big-buffer", type=int, default=0, help="extra buffer (floats) in the model, e.g. a cached table")
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, vocab=256, d=64, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d)) for _ in range(layers)])
        self.head = nn.Linear(d, vocab)
        if args.big_buffer:
            self.register_buffer("pos_table", torch.randn(args.big_buffer))

    def forward(self, x):
        return self.head(self.body(self.emb(x).mean(1)))


def batch(step, rank, B=16, T=8):
    g = torch.Generator().manual_seed(7919 * rank + step)
    x = torch.randint(0, 256, (B, T), generator=g)
    y = (x.sum(1) * 7) % 256
    return x, y


def main(rank=None, world=None):
    if rank is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(rank),
                          WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    if args.logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(name)s - %(message)s")
        say = logging.getLogger("trainer").info
    else:
        say = lambda m: print(f"[rank {rank}] {m}", flush=True)

    torch.manual_seed(1234)
    model = Net(d=args.hidden, layers=args.layers)
    start_step = 0
    ckpt = None
    if args.resume and (rank == 0 or not args.resume_rank0_only):
        say(f"resuming from {args.resume}")
        ckpt = torch.load(args.resume, map_location="cpu", mmap=args.mmap)
        model.load_state_dict(ckpt["model"])
        start_step = ckpt["step"]
        say(f"loaded model weights from step {start_step}")
    if args.freeze_emb:
        model.emb.weight.requires_grad_(False)
    ddp = DDP(model) if distributed else model
    if distributed and args.resume_rank0_only:
        t = torch.tensor([start_step]); dist.broadcast(t, 0); start_step = int(t)

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr)
    sched = None
    if args.onecycle:
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr * 10, total_steps=args.steps)
    if ckpt is not None and "optimizer" in ckpt:
        opt.load_state_dict(ckpt["optimizer"])
        if sched is not None and "scheduler" in ckpt:
            sched.load_state_dict(ckpt["scheduler"])
        say("restored optimizer/scheduler state")
    if args.resume and args.per_rank_state:
        shard = os.path.join(os.path.dirname(args.resume), f"rank{rank:02d}_state.pt")
        st = torch.load(shard)
        torch.set_rng_state(st["rng"])
        say(f"restored per-rank state from {shard}")

    say(f"world={world} hidden={args.hidden} start_step={start_step} steps={args.steps}")
    t0 = time.time()
    for step in range(start_step, start_step + args.steps if args.resume else args.steps):
        x, y = batch(step, rank)
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        if step % 5 == 0:
            say(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e} "
                f"({(time.time()-t0):.1f}s)")
        if args.save_dir and (step + 1) % args.save_every == 0:
            path = os.path.join(args.save_dir, f"ckpt_step{step+1:05d}.pt")
            if rank == 0:
                state = {"model": (ddp.state_dict() if args.save_wrapped else model.state_dict()),
                         "optimizer": opt.state_dict(), "step": step + 1}
                if sched is not None:
                    state["scheduler"] = sched.state_dict()
                if args.save_args:
                    state["args"] = args
                torch.save(state, path, _use_new_zipfile_serialization=not args.legacy_format)
                say(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.2f} MB)")
            if args.per_rank_state:
                torch.save({"rng": torch.get_rng_state(), "step": step + 1},
                           os.path.join(args.save_dir, f"rank{rank:02d}_state.pt"))
            if distributed:
                dist.barrier()
    say("done")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
