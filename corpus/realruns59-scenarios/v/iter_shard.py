"""Streaming (IterableDataset) DDP training: each rank reads its own shard files,
split across DataLoader workers. Shards are line-count-uneven unless --even."""
import argparse, os, glob, time, math, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--short-rank", type=int, default=1)
p.add_argument("--short-lines", type=int, default=96)
p.add_argument("--lines", type=int, default=320)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--split-workers", action="store_true", help="split shard across dataloader workers")
p.add_argument("--with-len", action="store_true")
p.add_argument("--nominal", type=int, default=0, help="samples per rank advertised by the manifest")
p.add_argument("--monitored", action="store_true")
p.add_argument("--logfmt", action="store_true")
args = p.parse_args()

class ShardStream(IterableDataset):
    def __init__(self, files, nominal_len=None):
        self.files = files; self.nominal_len = nominal_len
    def __len__(self):
        return self.nominal_len
    def __iter__(self):
        wi = get_worker_info()
        for f in self.files:
            with open(f) as fh:
                for j, line in enumerate(fh):
                    if args.split_workers and wi is not None and j % wi.num_workers != wi.id:
                        continue
                    vals = [float(v) for v in line.split(",")]
                    yield torch.tensor(vals[:16]), int(vals[16])

def write_shards(root, world):
    os.makedirs(root, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for r in range(world):
        n = args.short_lines if r == args.short_rank else args.lines
        with open(os.path.join(root, f"part-{r:05d}.csv"), "w") as f:
            for i in range(n):
                x = torch.randn(16, generator=g)
                f.write(",".join(f"{v:.4f}" for v in x.tolist()) + f",{int(x[0] > 0)}\n")

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.logfmt:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] rank=" + str(rank) + " %(message)s")
        say = logging.getLogger("stream").info
    else:
        say = lambda m: print(f"[r{rank}] {m}", flush=True)
    if rank == 0 and not glob.glob(os.path.join(args.data, "*.csv")):
        write_shards(args.data, world)
    dist.barrier()
    files = sorted(glob.glob(os.path.join(args.data, "*.csv")))[rank::world]
    nominal = (args.nominal or (args.lines // args.bs) * args.bs) if args.with_len else None
    ds = ShardStream(files, nominal)
    dl = DataLoader(ds, batch_size=args.bs, num_workers=args.workers)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 2)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    say(f"streaming {files} with {args.workers} workers")
    if args.with_len:
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=10 * len(dl))
        say(f"{len(dl)} batches per epoch (from manifest)")
    step = 0
    for x, y in dl:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        step += 1
        if step % 5 == 0:
            say(f"step {step} loss {loss.item():.4f}")
        if args.eval_every and step % args.eval_every == 0:
            acc = torch.tensor([0.5 + 0.01 * step])
            dist.all_reduce(acc)
            say(f"step {step} eval acc {acc.item() / world:.3f}")
    say(f"shard exhausted after {step} steps, syncing before checkpoint")
    if args.monitored:
        dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
    else:
        dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(args.data, "final.pt"))
        say("saved final.pt")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
