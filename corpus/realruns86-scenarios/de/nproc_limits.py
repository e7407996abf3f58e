"""Process/thread limits (ulimit -u as an unprivileged user): async checkpoint writer threads, DataLoader worker fork."""
import os, sys, time, threading
from concurrent.futures import ThreadPoolExecutor
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP
from common import base_args, init_dist, TinyNet

class RandDS(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), i % 4

def nthreads(): return len(os.listdir("/proc/self/task"))

def save_shards(sd, out, rank, nthreads_pool):
    os.makedirs(out, exist_ok=True)
    items = list(sd.items())
    with ThreadPoolExecutor(max_workers=nthreads_pool, thread_name_prefix="ckpt") as ex:
        futs = [ex.submit(torch.save, {k: v.clone()}, f"{out}/r{rank}_{i:03d}.pt") for i, (k, v) in enumerate(items)]
        for f in futs: f.result()

def main():
    p = base_args(); p.add_argument("--ckpt-every", type=int, default=0); p.add_argument("--io-threads", type=int, default=16)
    p.add_argument("--eval-workers", type=int, default=0)
    args = p.parse_args()
    rank, world = init_dist()
    torch.manual_seed(0)
    model = DDP(TinyNet()) if world > 1 else TinyNet()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(RandDS(), batch_size=32, num_workers=args.workers, shuffle=True)
    print(f"[rank{rank}] uid={os.getuid()} threads at start={nthreads()} workers={args.workers}", flush=True)
    for step, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f} threads={nthreads()}", flush=True)
        if args.ckpt_every and (step + 1) % args.ckpt_every == 0:
            # each rank writes its own optimizer/model shard files concurrently; rank 0 additionally writes the full model
            n = args.io_threads if (args.fault == "ckpt-threads" and rank == args.fault_rank) else 2
            flat = {f"opt.{i}.{k}": v for i, st in opt.state_dict()["state"].items() for k, v in st.items()}
            flat.update({f"model.{k}": v for k, v in model.state_dict().items()})
            save_shards(flat, f"{args.out}/step{step}", rank, n)
            print(f"[rank{rank}] checkpoint step {step} written", flush=True)
        if args.eval_workers and step == args.fault_step:
            ev = DataLoader(RandDS(), batch_size=64, num_workers=args.eval_workers if rank == args.fault_rank else 1)
            with torch.no_grad():
                acc = sum((model(x).argmax(1) == y).float().mean().item() for x, y in list(ev)[:4]) / 4
            print(f"[rank{rank}] eval acc {acc:.3f}", flush=True)
        if step + 1 >= args.steps: break
    if world > 1: dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)

if __name__ == "__main__":
    main()
