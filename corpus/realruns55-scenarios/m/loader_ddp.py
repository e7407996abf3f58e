"""DataLoader / sampler / collate faults under DDP (gloo, CPU)."""
import argparse, os, sys, time, signal, logging, glob, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--data-dir", default="/work/rr55/m/data/shards")
p.add_argument("--pylog", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

if args.pylog:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(msg):
    if args.pylog: log.info(msg)
    else: print(msg, flush=True)

class ShardDS(Dataset):
    def __init__(self, n=256, rank=0):
        if args.fault == "uneven" and rank == args.fault_rank:
            n = 320  # this rank's shard list has two extra files
        self.n, self.rank = n, rank
        self.meta = [{"x": i, "len": 16} for i in range(n)]
        if args.fault == "worker_error" and rank == args.fault_rank:
            # bad metadata record: a row written by an older preprocessing version
            for j in range(37, n, 53): self.meta[j] = {"x": j, "length": 16}
        if args.fault == "ragged" and rank == args.fault_rank:
            for i in range(0, n, 29): self.meta[i]["len"] = 13
    def __len__(self): return self.n
    def __getitem__(self, i):
        m = self.meta[i]
        if args.fault == "slow_io" and torch.utils.data.get_worker_info() is not None and dist.get_rank() == args.fault_rank and i % 7 == 3:
            time.sleep(30)  # stalled network filesystem read
        L = m["len"]
        g = torch.Generator().manual_seed(m["x"])
        return torch.randn(L, 8, generator=g), torch.randint(0, 4, (1,), generator=g).squeeze(0)

class NpyDS(Dataset):
    def __init__(self, files): self.files = files
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        a = np.load(self.files[i])
        return torch.from_numpy(a).float().reshape(16, 8), torch.tensor(i % 4)

class ManyDS(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        # each sample returns a list of small tensors (e.g. per-token features)
        return [torch.full((4,), float(i)) for _ in range(64)], torch.tensor(i % 4)

def collate_many(batch):
    feats = [torch.stack(b[0]).mean(0) for b in batch]
    return torch.stack(feats).unsqueeze(1).expand(-1, 16, -1).repeat(1,1,2), torch.stack([b[1] for b in batch])

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16 * 8, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    collate = None
    if args.fault == "npy":
        files = sorted(glob.glob(os.path.join(args.data_dir, "*.npy")))
        say(f"[rank{rank}] found {len(files)} shard files under {args.data_dir}")
        ds = NpyDS(files)
    elif args.fault == "fds":
        ds = ManyDS(); collate = None
    else:
        ds = ShardDS(rank=rank)
    if args.fault == "fds":
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
        dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=args.workers, collate_fn=lambda b: b, prefetch_factor=8)
    else:
        replicas = world
        if args.fault == "replicas" and rank == args.fault_rank:
            replicas = int(os.environ.get("LOCAL_WORLD_SIZE", world)) - 1  # "per-node" count misread
        sampler = DistributedSampler(ds, num_replicas=replicas, rank=rank, shuffle=True)
        kw = {}
        if args.fault == "slow_io": kw["timeout"] = 5
        if world == 1 and args.fault == "npy":
            sampler = None; kw["shuffle"] = True  # single-process debug run: plain shuffling
        if args.fault == "spawn_pickle":
            kw["multiprocessing_context"] = "spawn"
            kw["collate_fn"] = lambda b: (torch.stack([x for x, _ in b]), torch.stack([y for _, y in b]))
        dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=args.workers, **kw)
    say(f"[rank{rank}] world={world} samples/rank={len(sampler) if sampler is not None else len(ds)} batches/epoch={len(dl)} workers={args.workers}")
    it = iter(dl)
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr)
    steps = len(dl) if args.fault == "uneven" else args.steps
    for step in range(steps):
        if args.fault == "kill_worker" and rank == args.fault_rank and step == args.fault_step:
            pids = [w.pid for w in it._workers]
            os.kill(pids[0], signal.SIGKILL)  # stand-in for the kernel OOM-killer picking the worker
            time.sleep(0.5)
        batch = next(it)
        if args.fault == "fds":
            x = torch.stack([torch.stack(s[0]).mean(0) for s in batch]).repeat(1, 32).reshape(-1, 16, 8)
            y = torch.stack([s[1] for s in batch])
        else:
            x, y = batch
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        t = loss.detach().clone(); dist.all_reduce(t); t /= world
        if bar: bar.update(1); bar.set_postfix(loss=f"{t.item():.4f}")
        else: say(f"[rank{rank}] step {step} loss {t.item():.4f}")
    if bar: bar.close()
    dist.barrier()
    if rank == 0: say("training done")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
