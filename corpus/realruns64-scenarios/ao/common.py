"""Shared tiny model / data / setup for the realrun scenarios (CPU, gloo)."""
import argparse, os, sys, time, math, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

torch.set_num_threads(1)


def base_parser():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=12)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--logstyle", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--out", default="/tmp/rr64ao_out")
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=30900)
    return p


class SynthDataset(Dataset):
    def __init__(self, n=2048, d=32, classes=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, d, generator=g)
        w = torch.randn(d, classes, generator=g)
        self.y = (self.x @ w).argmax(1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def make_model(d=32, h=64, classes=4):
    return nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, classes))


def setup_logger(rank, mode):
    log = logging.getLogger("train")
    if mode == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s",
                            stream=sys.stdout)
        return log.info
    def p(msg):
        print(f"[rank{rank}] {msg}", flush=True)
    return p


def init_dist(timeout, rank=None, world=None, port=None):
    kw = dict(backend="gloo", timeout=timedelta(seconds=timeout))
    if rank is not None:
        kw.update(init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    dist.init_process_group(**kw)
    return dist.get_rank(), dist.get_world_size()


def train(args, rank, world, fault_hook=None, log=None, model=None, extra_before_step=None):
    """Plain DDP training loop; fault_hook(step) is called before each step."""
    log = log or setup_logger(rank, args.logstyle)
    torch.manual_seed(0)
    model = model or make_model()
    ddp = DDP(model) if world > 1 else model
    ds = SynthDataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None,
                    num_workers=args.workers, persistent_workers=False)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        it = dl
        if args.logstyle == "tqdm" and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, total=min(len(dl), args.steps), desc=f"epoch {epoch}", dynamic_ncols=False, ncols=90)
        for x, y in it:
            if step >= args.steps:
                break
            if fault_hook:
                fault_hook(step)
            out = ddp(x)
            loss = lossf(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0 and args.logstyle != "tqdm":
                acc = (out.argmax(1) == y).float().mean().item()
                log(f"epoch {epoch} step {step}/{args.steps} loss {loss.item():.4f} acc {acc:.3f} lr 0.05 "
                    f"{(time.time()-t0)/(step+1)*1000:.1f} ms/step")
            step += 1
            time.sleep(0.05)
    log(f"training finished: {step} steps in {time.time()-t0:.1f}s")
    return ddp
