"""Training loop with defensive code paths (retries, skips, fallbacks) that log loudly but keep going.

Launch with plain python (single process), with torchrun, or with --spawn N (torch.multiprocessing.spawn).
--case: oom_retry | skip_bad | exit_ignored | upload_retry | cache_race | eval_oom | fd_leak
"""
import argparse
import datetime
import glob
import logging
import os
import sys
import time
import traceback
import urllib.request
import urllib.error

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--case", default="oom_retry")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--bs", type=int, default=64)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--data-dir", default="data_npy")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=47440)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--progress", action="store_true")
args = p.parse_args()


def setup_logging(rank):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s - %(message)s", force=True)
    return logging.getLogger("trainer")


class NpyDir(Dataset):
    """One .npy per sample; unreadable files are skipped (logged) and replaced by the next sample."""

    def __init__(self, root, leak=False):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.leak = leak
        self._open = []
        self.log = logging.getLogger("data")

    def __len__(self):
        return len(self.files)

    def _read(self, i):
        if self.leak:
            # memory-maps kept for "speed": every file stays open
            f = open(self.files[i], "rb")
            self._open.append(f)
            arr = np.load(f, allow_pickle=False)
            return arr
        return np.load(self.files[i], allow_pickle=False)

    def __getitem__(self, i):
        for k in range(5):
            j = (i + k) % len(self.files)
            try:
                arr = self._read(j)
                x = torch.from_numpy(arr[:-1]).float()
                y = int(arr[-1])
                return x, y
            except (ValueError, OSError, EOFError) as e:
                if self.leak and isinstance(e, OSError) and e.errno == 24:
                    raise
                self.log.exception("failed to read sample %s, trying next one", self.files[j])
        raise RuntimeError("too many unreadable samples in a row")


class TmpWriter:
    """Asynchronous-ish metrics writer; flushes on garbage collection."""

    def __init__(self, path):
        self.path = path
        self.buf = []
        self.fh = open(path, "a")

    def add(self, s):
        self.buf.append(s)

    def close(self):
        self.fh.close()

    def __del__(self):
        # flush what is left; at interpreter shutdown the handle may already be closed
        for s in self.buf:
            self.fh.write(s + "\n")


def make_model(d=32, hidden=256, n_out=4):
    return nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_out))


def synthetic(n, d=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, :4]).argmax(1)
    return x, y


def post_metrics(url, payload, log, tries=3):
    for attempt in range(1, tries + 1):
        try:
            req = urllib.request.Request(url, data=payload.encode(), method="POST")
            urllib.request.urlopen(req, timeout=2)
            return True
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            log.warning("metrics push attempt %d/%d failed:\n%s", attempt, tries, traceback.format_exc())
            time.sleep(0.5 * attempt)
    log.error("giving up on metrics push for this step; metrics kept locally")
    return False


def main(rank=None, world=None):
    distributed = False
    if rank is None:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
        distributed = "RANK" in os.environ
    else:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
        distributed = True
    log = setup_logging(rank)
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=40))
        log.info("joined process group (%d ranks)", world)
    torch.manual_seed(rank)

    model = make_model(hidden=args.hidden)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    if args.case == "cache_race":
        # rank 0 builds the feature cache, the others read it (no barrier in between)
        cache = "feature_cache.pt"
        if rank == 0:
            if not os.path.exists(cache):
                log.info("building feature cache %s", cache)
                x, y = synthetic(2048)
                time.sleep(2.0)
                torch.save({"x": x, "y": y}, cache)
        else:
            time.sleep(0.2)
        d = torch.load(cache)
        log.info("loaded feature cache with %d rows (restart count %s)", len(d["x"]),
                 os.environ.get("TORCHELASTIC_RESTART_COUNT"))
        X, Y = d["x"], d["y"]
    else:
        X, Y = synthetic(4096, seed=rank)

    writer = None
    if args.case == "exit_ignored":
        writer = TmpWriter(f"metrics_rank{rank}.txt")

    if args.case in ("skip_bad", "fd_leak"):
        ds = NpyDir(args.data_dir, leak=args.case == "fd_leak")
        log.info("dataset: %d files in %s", len(ds), args.data_dir)
        dl = DataLoader(ds, batch_size=args.bs, shuffle=False, num_workers=args.workers)
        it = iter(dl)

        def next_batch():
            nonlocal it
            try:
                return next(it)
            except StopIteration:
                it = iter(dl)
                return next(it)
    else:
        def next_batch():
            idx = torch.randint(0, len(X), (bs,))
            return X[idx], Y[idx]

    bs = args.bs
    rng = range(1, args.steps + 1)
    if args.progress and rank == 0:
        from tqdm import tqdm
        rng = tqdm(rng, desc="train", dynamic_ncols=False, ncols=90, mininterval=0)
    for step in rng:
        while True:
            try:
                x, y = next_batch()
                if args.case == "oom_retry":
                    # activation-heavy path: widen features per sample
                    x = x.repeat(1, 1)
                    big = torch.empty(bs, 4096, 4096)  # attention-like scratch buffer per batch
                    big.zero_()
                    del big
                out = model(x)
                loss = loss_fn(out, y)
                break
            except RuntimeError as e:
                if args.case == "oom_retry" and "can't allocate memory" in str(e) and bs > 1:
                    log.warning("OOM at batch size %d:\n%s", bs, traceback.format_exc())
                    bs //= 2
                    log.warning("retrying step %d with batch size %d", step, bs)
                    continue
                raise
        opt.zero_grad()
        loss.backward()
        opt.step()
        if writer is not None:
            writer.add(f"{step},{loss.item():.4f}")
        if step % 3 == 0:
            log.info("step %d/%d loss %.4f bs %d", step, args.steps, loss.item(), bs)
            if args.case == "upload_retry" and rank == 0:
                post_metrics(f"http://127.0.0.1:{args.port}/api/metrics", f'{{"step": {step}, "loss": {loss.item()}}}', log)

    if args.case == "eval_oom":
        # evaluation on the whole held-out set at once
        Xe, Ye = synthetic(200000, d=32, seed=99)
        with torch.no_grad():
            feats = Xe.unsqueeze(1) * torch.ones(1, 4096, 1)  # augment: 4096 jittered copies per row
            out = model(feats.mean(1))
        log.info("eval acc %.3f", (out.argmax(1) == Ye).float().mean().item())

    if writer is not None:
        writer.close()  # closes the handle; leftover buffer is flushed by __del__ at exit
        writer.buf.append("final")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    log.info("done: %d steps, final batch size %d", args.steps, bs)


def spawn_entry(rank, world):
    main(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
