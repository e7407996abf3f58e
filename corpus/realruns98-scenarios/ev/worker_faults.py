"""DataLoader worker faults on a tiny feature-regression job.

--fault none|segv|sigbus|kill|badlabel|fifo
Launch with torchrun (env RANK set), with --spawn N (torch.multiprocessing.spawn), or plain python.
"""
import argparse, ctypes, datetime, glob, json, logging, os, sys, time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

DATA = "/work/rr98/ev/data/feat"
log = logging.getLogger("train")


def make_data(rank, n=256, dim=32, nclass=5):
    os.makedirs(DATA, exist_ok=True)
    path = f"{DATA}/shard_r{rank}.bin"
    if not os.path.exists(path):
        rng = np.random.default_rng(rank)
        rng.standard_normal((n, dim), dtype=np.float32).tofile(path)
        labels = [["cat", "dog", "bird", "fish", "frog"][i % nclass] for i in range(n)]
        json.dump(labels, open(f"{DATA}/labels_r{rank}.json", "w"))
    return path


class FeatDataset(Dataset):
    def __init__(self, rank, args, dim=32):
        self.path = make_data(rank)
        self.dim = dim
        self.args = args
        self.rank = rank
        self.mm = np.memmap(self.path, dtype=np.float32, mode="r").reshape(-1, dim)
        self.labels = json.load(open(f"{DATA}/labels_r{rank}.json"))
        if args.fault == "badlabel" and rank == args.fault_rank:
            # a relabelled shard: one annotator used a new class name
            self.labels[args.fault_idx] = "Frog"  # (re-pointed below for DDP runs)
        self.class_to_idx = {c: i for i, c in enumerate(sorted({"cat", "dog", "bird", "fish", "frog"}))}

    def __len__(self):
        return self.mm.shape[0]

    def __getitem__(self, i):
        a = self.args
        if a.fault == "segv" and self.rank == a.fault_rank and i == a.fault_idx:
            # native decoder reads a record header through a NULL pointer (bad offset table entry)
            ctypes.string_at(0x7ead00000000 + 16 * i, 16)
        if a.fault == "fifo" and self.rank == a.fault_rank and i == a.fault_idx:
            # side-car file for this record lives on a stuck path (named pipe left by the exporter)
            with open(self.path + ".idx", "rb") as f:
                f.read()
        x = torch.from_numpy(np.array(self.mm[i]))
        y = self.class_to_idx[self.labels[i]]
        if a.slow:
            time.sleep(a.slow)
        return x, y


def worker_init(wid):
    info = torch.utils.data.get_worker_info()
    pidfile = os.environ.get("WORKER_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as f:
            f.write(f"{os.environ.get('RANK', 0)} {os.getpid()}\n")


def main_worker(rank, world, args):
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
    if args.timestamps:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
    torch.manual_seed(0)
    ds = FeatDataset(rank if args.per_rank_shard else 0, args)
    ds.rank = rank
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    if sampler is not None and rank == args.fault_rank:
        # the bad record is the fault_idx-th record this rank reads in epoch 0
        args.fault_idx = list(iter(sampler))[args.fault_idx]
        if args.fault == "badlabel":
            ds.labels[args.fault_idx] = "Frog"
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=(sampler is None),
                    num_workers=args.workers, persistent_workers=args.persistent and args.workers > 0,
                    timeout=args.dl_timeout, worker_init_fn=worker_init, pin_memory=args.pin)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 5))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    lossf = nn.CrossEntropyLoss()
    log.info(f"rank {rank}/{world}: {len(ds)} samples, {len(dl)} batches/epoch, num_workers={args.workers}")
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        if args.sched_at_epoch_start:
            sched.step()  # legacy pattern: decay at the start of each epoch
        t0 = time.time()
        for x, y in dl:
            loss = lossf(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % args.log_every == 0:
                log.info(f"epoch {ep} step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e} data_s/it {(time.time()-t0)/step:.3f}")
        log.info(f"epoch {ep} done in {time.time()-t0:.1f}s")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    log.info("training finished")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-idx", type=int, default=100)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--pin", action="store_true")
    p.add_argument("--dl-timeout", type=float, default=0)
    p.add_argument("--pg-timeout", type=int, default=60)
    p.add_argument("--slow", type=float, default=0)
    p.add_argument("--timestamps", action="store_true")
    p.add_argument("--log-every", type=int, default=4)
    p.add_argument("--per-rank-shard", action="store_true")
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--sched-at-epoch-start", action="store_true")
    p.add_argument("--port", type=int, default=41700)
    args = p.parse_args()
    if args.spawn:
        torch.multiprocessing.spawn(main_worker, args=(args.spawn, args), nprocs=args.spawn)
    elif "RANK" in os.environ:
        main_worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        main_worker(0, 1, args)


if __name__ == "__main__":
    main()
