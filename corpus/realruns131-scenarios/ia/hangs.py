"""Tiny gloo trainer with stall / deadlock faults.

--fault:
  none           healthy (with alarming but harmless warnings when --noisy)
  loader_block   a DataLoader worker blocks reading a sample (FIFO with no writer) on --bad-rank;
                 with --dl-timeout > 0 the DataLoader times out, else the rank just hangs
  lock_deadlock  async checkpoint thread and the main loop take two locks in opposite order on --bad-rank
  fifo_io        --bad-rank reads its shard from a named pipe nobody writes (stuck in open())
  queue_deadlock --bad-rank joins a metrics-writer process before draining its queue
  prompt         --bad-rank asks "overwrite? [y/N]" on stdin (blocks when stdin is a pipe left open)
  store_key      ranks != 0 wait on a store key that rank 0 publishes under another name
"""
import argparse, faulthandler, logging, os, sys, threading, time, warnings
import multiprocessing as mp
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=4)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--pg-timeout", type=float, default=20)
p.add_argument("--watchdog", type=float, default=0)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--noisy", action="store_true")
p.add_argument("--workdir", default="/work/rr131/ia/tmp/wd")
args = p.parse_args()


class Shards(Dataset):
    def __init__(self, n, rank, fault, bad_rank, at_idx, fifo):
        g = torch.Generator().manual_seed(3)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x[:, :4].sum(1) > 0).long()
        self.rank, self.fault, self.bad, self.at, self.fifo = rank, fault, bad_rank, at_idx, fifo

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.fault == "loader_block" and self.rank == self.bad and i == self.at:
            # sample lives on a "remote" path; the reader blocks forever
            with open(self.fifo, "rb") as f:
                f.read(64)
        return self.x[i], self.y[i]


def writer_proc(q):
    # metrics writer: puts a big summary blob then exits
    q.put({"hist": torch.randn(200000).tolist()})


def main():
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
        log = logging.getLogger("trainer").info
    else:
        def log(m):
            print(f"[r{rank}] {m}", flush=True)
    if args.watchdog:
        faulthandler.dump_traceback_later(args.watchdog, exit=True)

    os.makedirs(args.workdir, exist_ok=True)
    fifo = os.path.join(args.workdir, f"remote_sample_r{rank}.bin")
    if args.fault in ("loader_block", "fifo_io") and rank == args.bad_rank:
        if os.path.exists(fifo):
            os.remove(fifo)
        os.mkfifo(fifo)

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    log(f"world_size={world} backend={dist.get_backend()}")

    if args.noisy:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors.", UserWarning)
        log("WARNING: gradient norm 84.21 exceeds clip threshold 1.0, clipping")
        log("WARNING: loss scale not found in checkpoint, using default 65536")

    if args.fault == "store_key":
        store = dist.distributed_c10d._get_default_store()
        if rank == 0:
            store.set("run_config/vocab", "32000")
            log("published run_config/vocab to store")
        else:
            log("waiting for run config from rank 0 ...")
            v = store.get("run_cfg/vocab")
            log(f"got vocab {v}")

    if args.fault == "prompt" and rank == args.bad_rank:
        out = os.path.join(args.workdir, "outputs")
        os.makedirs(out, exist_ok=True)
        print(f"Output directory {out} already exists and is not empty. Overwrite? [y/N]: ", end="", flush=True)
        ans = sys.stdin.readline()
        if ans.strip().lower() != "y":
            log("keeping existing outputs")

    if args.fault == "fifo_io" and rank == args.bad_rank:
        log(f"loading shard index from {fifo}")
        with open(fifo, "rb") as f:
            f.read()

    ds = Shards(256, rank, args.fault, args.bad_rank, 8 * args.at_step + 3, fifo)
    sampler = DistributedSampler(ds, shuffle=False)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=args.workers,
                    timeout=args.dl_timeout, shuffle=False)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    lock_a, lock_b = threading.Lock(), threading.Lock()

    def async_ckpt(step):
        with lock_b:          # holds the "file" lock
            time.sleep(0.5)
            with lock_a:      # then wants the "state" lock
                torch.save(model.module.state_dict(), os.path.join(args.workdir, f"ck_r{rank}_{step}.pt"))

    gstep = 0
    for ep in range(args.epochs):
        sampler.set_epoch(ep)
        it = dl
        if args.progress:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"[r{rank}] epoch {ep}", file=sys.stdout, mininterval=0)
        for xb, yb in it:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            acc = torch.tensor([(model(xb).argmax(1) == yb).float().mean().item()])
            dist.all_reduce(acc)
            if not args.progress:
                log(f"epoch {ep} step {gstep} loss={loss.item():.4f} acc={acc.item()/world:.3f}")
            if args.fault == "lock_deadlock" and rank == args.bad_rank and gstep == args.at_step:
                log(f"starting async checkpoint at step {gstep}")
                th = threading.Thread(target=async_ckpt, args=(gstep,), daemon=True)
                th.start()
                with lock_a:      # main loop holds the "state" lock while updating EMA
                    time.sleep(0.2)
                    with lock_b:
                        pass
            if args.fault == "queue_deadlock" and rank == args.bad_rank and gstep == args.at_step:
                q = mp.Queue()
                w = mp.Process(target=writer_proc, args=(q,))
                w.start()
                log("waiting for metrics writer to finish")
                w.join()
                summary = q.get()
                log(f"metrics summary size {len(summary['hist'])}")
            gstep += 1
        log(f"epoch {ep} done")
    dist.barrier()
    log("finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
