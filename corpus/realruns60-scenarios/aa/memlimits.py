"""Tiny DDP LM trainer used to exercise memory / resource limits on one rank.

Flags select the fault, the rank it hits and the step.
"""
import argparse
import datetime
import logging
import os
import resource
import sys
import threading
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, help="rank the fault hits")
p.add_argument("--step", type=int, default=5, help="step the fault hits")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--workers-rank", type=int, default=-1, help="only this rank uses workers (-1: all)")
p.add_argument("--sample-mb", type=float, default=0.0, help="extra float payload per sample (MiB)")
p.add_argument("--mem-cap-mb", type=int, default=0, help="RLIMIT_AS headroom applied on --rank at --step")
p.add_argument("--nofile", type=int, default=0)
p.add_argument("--ckpt-dir", default="/work/rr60/aa/ckpt")
p.add_argument("--data-dir", default="/work/rr60/aa/data")
p.add_argument("--tslog", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--single", action="store_true", help="no process group")
p.add_argument("--spawn", type=int, default=0, help="torch.multiprocessing.spawn N ranks")
p.add_argument("--port", type=int, default=30251)
p.add_argument("--probe-bs", type=int, default=0, help="auto batch-size finder starting here")
p.add_argument("--startup-cap-mb", type=int, default=0)
p.add_argument("--sharing", default="")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--leak-mb", type=int, default=48)
args = p.parse_args()


def vm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) // 1024
    return 0


class TokenDataset(Dataset):
    def __init__(self, n, seq, vocab, sample_mb=0.0, shard_dir=None, leak_fds=False):
        g = torch.Generator().manual_seed(0)
        self.toks = torch.randint(0, vocab, (n, seq + 1), generator=g)
        self.extra = int(sample_mb * 1024 * 1024 / 4)
        self.shard_dir = shard_dir
        self.leak_fds = leak_fds
        self._open = []
        self._grow = []

    def __len__(self):
        return len(self.toks)

    def __getitem__(self, i):
        t = self.toks[i]
        item = {"input_ids": t[:-1], "labels": t[1:]}
        if self.extra:
            item["feats"] = torch.randn(self.extra)
        if self.shard_dir is not None:
            # per-sample memmap of the shard holding this sample
            path = os.path.join(self.shard_dir, f"shard_{i % 8:03d}.bin")
            fh = open(path, "rb")
            mm = np.memmap(fh, dtype=np.int32, mode="r")
            item["aux"] = torch.from_numpy(np.array(mm[:16]))
            if self.leak_fds:
                self._open.append((fh, mm))
            else:
                del mm
                fh.close()
        if args.fault == "worker-leak" and torch.utils.data.get_worker_info() is not None:
            # augmentation cache that is never evicted
            self._grow.append(np.ones(2_000_000, dtype=np.float64))
        return item


class TinyLM(nn.Module):
    def __init__(self, vocab=512, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.block = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True, dropout=0.0)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.block(self.emb(x)))


def setup_logging(rank):
    if args.tslog:
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
            stream=sys.stdout,
        )
    else:
        logging.basicConfig(level=logging.INFO, format=f"[rank{rank}] %(message)s", stream=sys.stdout)
    return logging.getLogger("train")


def main(rank, world):
    log = setup_logging(rank)
    if not args.single:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    if args.nofile and rank == args.rank:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, hard))
        log.info("node limits: nofile soft=%d hard=%d", args.nofile, hard)
    vocab = 512
    if args.sharing:
        torch.multiprocessing.set_sharing_strategy(args.sharing)
    if rank == 0 and args.workers:
        st = os.statvfs("/dev/shm")
        shm_mb = st.f_blocks * st.f_frsize >> 20
        if shm_mb < 1024:
            log.warning("/dev/shm is only %d MiB; DataLoader workers may crash with 'Bus error' or 'No space left on device' "
                        "(docker: --shm-size, k8s: emptyDir medium=Memory)", shm_mb)
    if args.startup_cap_mb:
        cap = (vm_mb() + args.startup_cap_mb) << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))
        log.info("RLIMIT_AS soft limit %d MiB", cap >> 20)
    ds = TokenDataset(
        2048, args.seq, vocab, args.sample_mb,
        shard_dir=args.data_dir if args.fault in ("fd-leak", "fd-ok") else None,
        leak_fds=args.fault == "fd-leak",
    )
    sampler = None if args.single else DistributedSampler(ds, shuffle=True)
    nw = args.workers if (args.workers_rank < 0 or args.workers_rank == rank) else 0
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, num_workers=nw,
                    persistent_workers=nw > 0)
    model = TinyLM(vocab)
    if not args.single:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()
    log.info("world=%d params=%d workers=%d bs=%d", world, sum(p.numel() for p in model.parameters()), nw, args.bs)

    if args.probe_bs:
        bs = args.probe_bs
        while True:
            try:
                probe = torch.randint(0, vocab, (bs, args.seq))
                out = model(probe)
                lossf(out.reshape(-1, vocab), probe.reshape(-1)).backward()
                model.zero_grad(set_to_none=True)
                del out
                log.info("batch size %d fits", bs)
                break
            except (RuntimeError, MemoryError):
                log.warning("batch size %d does not fit in memory, halving", bs, exc_info=True)
                bs //= 2
                if bs < 1:
                    raise
        dl = DataLoader(ds, batch_size=bs, sampler=sampler, shuffle=sampler is None, num_workers=nw,
                        persistent_workers=nw > 0)
    eval_cache = []
    step = 0
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", file=sys.stderr, mininterval=0, ncols=90)
    dl_iter = iter(dl)
    for _ in it:
        try:
            batch = next(dl_iter)
        except StopIteration:
            dl_iter = iter(dl)
            batch = next(dl_iter)
        step += 1
        x, y = batch["input_ids"], batch["labels"]
        logits = model(x)
        loss = lossf(logits.reshape(-1, vocab), y.reshape(-1))
        if "feats" in batch:
            loss = loss + 0.0 * batch["feats"].mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

        if args.fault.startswith("as-") and rank == args.rank and step == args.step - 1 and args.mem_cap_mb:
            cur = vm_mb()
            cap = (cur + args.mem_cap_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))
            log.info("address-space cap now %d MiB (vm=%d MiB)", cap >> 20, cur)

        if args.fault == "keep-batches" and rank == args.rank:
            # replay buffer of recent batches for the hard-example miner
            eval_cache.append(batch)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if args.fault == "leak" and rank == args.rank and step >= args.step:
            # keep full-precision eval predictions (with their autograd graph) for the epoch-end report
            eval_cache.append(model(x.repeat(args.leak_mb * 1024 * 1024 // (x.numel() * vocab * 4), 1)))
        if rank == args.rank and step == args.step:
            if args.fault == "as-tensor":
                # perplexity over all eval positions: materialises full-vocab logits for 64k windows
                eval_logits = torch.empty(65536, args.seq, vocab)
                eval_cache.append(eval_logits)
            elif args.fault == "as-numpy":
                # co-occurrence statistics over the vocabulary for the tokenizer report
                cooc = np.zeros((vocab * 64, vocab * 16), dtype=np.float64)
                eval_cache.append(cooc)
            elif args.fault == "as-bytes":
                # load the next raw shard fully into memory before tokenising it
                with open(os.path.join(args.data_dir, "raw_shard_big.txt"), "rb") as f:
                    blob = f.read()
                eval_cache.append(blob)
            elif args.fault == "as-thread":
                # async checkpoint writer thread
                th = threading.Thread(target=torch.save, args=(model.state_dict(), os.path.join(args.ckpt_dir, f"async_{rank}.pt")))
                th.start()
                th.join()
            elif args.fault == "as-unique":
                ids = torch.randint(0, 2**40, (40_000_000,))
                eval_cache.append(torch.unique(ids, sorted=False))
            elif args.fault == "fsize":
                emb = model.module.emb.weight.detach().numpy() if not args.single else model.emb.weight.detach().numpy()
                os.makedirs(args.ckpt_dir, exist_ok=True)
                big = np.repeat(emb[None], 64, axis=0)
                with open(os.path.join(args.ckpt_dir, f"emb_history_rank{rank}.f32"), "wb") as fh:
                    fh.write(big.tobytes())
            elif args.fault == "deep-recursion":
                # flatten the nested span tree produced by the sample packer
                sys.setrecursionlimit(1_000_000)
                def build(d):
                    node = None
                    for _ in range(d):
                        node = {"span": (0, 1), "child": node}
                    return node
                import pickle
                blob = pickle.dumps(build(300_000))  # shipped to the data-service cache
                log.info("packed span tree: %d bytes", len(blob))
            elif args.fault == "cpu-burn":
                # "quick" exact eval on this rank: O(n^2) pairwise similarity over all tokens
                e = torch.randn(6000, 512)
                for _ in range(2000):
                    e = torch.tanh(e @ torch.randn(512, 512) / 20)
        if args.fault == "save-ckpt" and rank == 0 and step % args.step == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step:05d}.pt")
            sd = (model.module if not args.single else model).state_dict()
            torch.save({"model": sd, "opt": opt.state_dict(), "step": step,
                        "ema": {k: v.clone().repeat(8, *([1] * (v.dim() - 1))) if v.dim() else v for k, v in sd.items()}}, path)
            log.info("saved %s", path)
        if step % 2 == 0:
            if not args.tqdm:
                log.info("step %d loss %.4f vm %d MiB", step, loss.item(), vm_mb())
            elif rank == 0:
                it.set_postfix(loss=f"{loss.item():.3f}")
    if not args.single:
        dist.barrier()
    log.info("training finished, %d steps", step)
    if not args.single:
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    main(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif args.single:
        main(0, 1)
    else:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
