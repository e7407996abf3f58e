"""DDP text-classifier training launched with torch.multiprocessing.spawn (gloo, CPU)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=41030)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--sched-first", action="store_true")
    p.add_argument("--eval-batch", type=int, default=64)
    return p.parse_args()

class Clf(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(500, 64); self.fc = nn.Linear(64, 64); self.out = nn.Linear(64, 5)
        self.aux_head = nn.Linear(64, 5)  # kept for a planned auxiliary loss
    def forward(self, x):
        return self.out(F.relu(self.fc(self.emb(x))))

def worker(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    device = torch.device(args.device if (args.fault_rank < 0 or rank == args.fault_rank) else "cpu")
    print(f"[rank {rank}] using device {device}", flush=True)
    model = Clf().to(device)
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    X = torch.randint(0, 500, (1024, 20)); y = X.float().mean(1).div(100).long().clamp(max=4)
    ds = TensorDataset(X, y)
    sampler = DistributedSampler(ds, num_replicas=args.world, rank=rank)
    dl = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=args.workers)
    step = 0
    for ep in range(args.epochs):
        sampler.set_epoch(ep)
        t0 = time.time()
        for xb, yb in dl:
            xb, yb = xb.to(device), yb.to(device)
            if args.sched_first and step == 0:
                sched.step()
            loss = F.cross_entropy(ddp(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            if not args.sched_first:
                pass
            if step % 8 == 0 and rank == 0:
                print(f"epoch {ep} step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}", flush=True)
            step += 1
        sched.step()
        # evaluation on the full set on every rank
        with torch.no_grad():
            logits = model(X.to(device))
            acc = (logits.argmax(-1).cpu() == y).float().mean()
        t = torch.tensor([acc.item()]); dist.all_reduce(t)
        if rank == 0:
            print(f"epoch {ep} done in {time.time()-t0:.1f}s eval_acc={t.item()/args.world:.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    args = get_args()
    mp.spawn(worker, args=(args,), nprocs=args.world, join=True)
