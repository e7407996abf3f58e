"""DDP trainer launched with torch.multiprocessing.spawn (gloo, CPU); resume/checkpoint faults."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

class MLP(nn.Module):
    def __init__(self, h=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, h), nn.GELU(), nn.Linear(h, h), nn.GELU())
        self.head = nn.Linear(h, 5)
    def forward(self, x): return self.head(self.body(x))

def setup_metrics(rank, world, port):
    # helper copied from an eval utility: sets up its own process group
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))

def worker(rank, world, args):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    print(f"[rank {rank}/{world}] process group ready (pid {os.getpid()})", flush=True)
    if args.fault == "pg_twice":
        setup_metrics(rank, world, args.port)
    torch.manual_seed(0)
    model = MLP(args.hidden)
    if args.resume:
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"] if "model" in sd else sd)
        print(f"[rank {rank}] resumed from {args.resume}", flush=True)
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    g = torch.Generator().manual_seed(7)
    X = torch.randn(960, 20, generator=g); Y = (X[:, :5].argmax(1))
    ds = TensorDataset(X, Y)
    n_rep = world
    if args.fault == "sampler_replicas":
        n_rep = args.cfg_gpus   # replicas taken from the old config ("num_gpus": 2) instead of world size
    sampler = DistributedSampler(ds, num_replicas=n_rep, rank=rank)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=args.workers)
    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        if args.fault == "sched_first" and epoch == 0:
            sched.step()   # scheduler stepped before the first optimizer step (harmless warning)
        for x, y in dl:
            step += 1
            logits = ddp(x)
            loss = nn.functional.cross_entropy(logits, y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 5 == 0:
                acc = (logits.argmax(1) == y).float().mean().item()
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f} acc {acc:.3f} lr {opt.param_groups[0]['lr']:.2e}", flush=True)
        sched.step()
        if rank == 0:
            os.makedirs(args.out, exist_ok=True)
            torch.save({"model": model.state_dict(), "epoch": epoch}, os.path.join(args.out, "last.pt"))
            print(f"[rank 0] epoch {epoch} done, saved {args.out}/last.pt", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=3)
    p.add_argument("--port", type=int, default=29620)
    p.add_argument("--fault", default="none")
    p.add_argument("--resume", default="")
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--cfg-gpus", type=int, default=2)
    p.add_argument("--out", default="/work/rr53/c/out_spawn")
    args = p.parse_args()
    mp.spawn(worker, args=(args.world, args), nprocs=args.world, join=True)
