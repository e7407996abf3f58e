"""Checkpoint/output-writing scenarios launched with torch.multiprocessing.spawn (or torchrun if RANK is set).
--save-mode pyfile (torch.save to a buffer, then written through a Python file object) | torchsave (torch.save(path)) |
per-sample (one small .pt of predictions per sample) ; --ckpt-dir DIR ; --every N."""
import argparse, io, os, sys, time, json
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--save-mode", default="pyfile")
    p.add_argument("--ckpt-dir", default="runs/ckpt")
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--port", default="46104")
    return p.parse_args()

def worker(rank, args, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(args.width, args.width), nn.Tanh(), nn.Linear(args.width, args.width), nn.Tanh(), nn.Linear(args.width, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    os.makedirs(args.ckpt_dir, exist_ok=True)
    for step in range(1, args.steps + 1):
        x = torch.randn(64, args.width); y = x[:, :8].sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            print(f"rank {rank} | step {step:4d} | loss {loss.item():.5f}", flush=True)
        if args.save_mode == "per-sample":
            out = model(x).detach()
            for j in range(x.shape[0]):
                torch.save(out[j].clone(), os.path.join(args.ckpt_dir, f"pred_r{rank}_s{step:05d}_{j:03d}.pt"))
        if step % args.every == 0 and rank == 0 and args.save_mode != "per-sample":
            path = os.path.join(args.ckpt_dir, f"step_{step:06d}.pt")
            state = {"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}
            t0 = time.time()
            free = __import__("shutil").disk_usage(args.ckpt_dir).free
            if free < 3 * 6 * 2**20:
                print(f"rank 0 | WARNING: low disk space on {args.ckpt_dir}: {free/2**20:.1f} MiB free, checkpoint may not fit", flush=True)
            if args.save_mode == "torchsave":
                torch.save(state, path)
            else:
                buf = io.BytesIO(); torch.save(state, buf)
                with open(path + ".tmp", "wb") as f:
                    f.write(buf.getbuffer())
                os.replace(path + ".tmp", path)
            print(f"rank 0 | saved {path} ({os.path.getsize(path)/2**20:.1f} MiB) in {time.time()-t0:.2f}s", flush=True)
        if step % args.every == 0:
            dist.barrier()
    print(f"rank {rank} | done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    args = get_args()
    if "RANK" in os.environ:
        worker(int(os.environ["RANK"]), args, int(os.environ["WORLD_SIZE"]))
    else:
        mp.spawn(worker, args=(args, args.nprocs), nprocs=args.nprocs, join=True)
