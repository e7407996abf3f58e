"""torch.multiprocessing.spawn trainer: --mode healthy_slow | healthy_chatter | (kill is external)."""
import argparse, os, time, datetime, warnings
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from tqdm import tqdm

def worker(rank, world, a):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=40))
    torch.manual_seed(0)
    print(f"[rank{rank}] worker pid {os.getpid()} ready", flush=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    g = torch.Generator().manual_seed(rank)
    bar = tqdm(range(a.steps), desc=f"rank{rank}", position=rank, disable=(rank != 0 and not a.bars))
    for step in bar:
        if step == 0 and rank == 0:
            sched.step()  # called before optimizer.step(): torch warns about the order
        x = torch.randn(32, 16, generator=g); y = x.sum(1, keepdim=True)
        t0 = time.time()
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if a.slow_rank == rank and step in a.slow_steps:
            time.sleep(a.slow_secs)  # e.g. page cache miss on this host
        time.sleep(a.step_sleep)
        dt = time.time() - t0
        if dt > 1.5:
            print(f"[rank{rank}] WARNING: step {step} took {dt:.1f}s (median 0.05s) - possible straggler", flush=True)
        if step % 10 == 0:
            bar.write(f"[rank{rank}] step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
    dist.barrier()
    if rank == 0:
        print("[rank0] done: final loss %.4f" % loss.item(), flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--port", type=int, default=48210)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-steps", type=int, nargs="*", default=[])
    p.add_argument("--slow-secs", type=float, default=3.0)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--bars", action="store_true")
    a = p.parse_args()
    mp.spawn(worker, args=(2, a), nprocs=2, join=True)
