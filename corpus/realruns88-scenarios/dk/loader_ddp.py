"""DDP toy language-model training whose data comes from per-sample .npy token files
through torch.utils.data.DataLoader workers.  --fault selects a real-world data bug.

Data layout: DATA/shard{r}/sample_{i:05d}.npy  (+ labels.json mapping file -> tag)
"""
import argparse, ctypes, datetime, json, logging, os, sys, time, warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr88/dk/data/tok")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-index", type=int, default=37)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps", type=int, default=0, help="max steps per epoch (0 = all)")
p.add_argument("--seq", type=int, default=32)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--persistent", action="store_true")
p.add_argument("--pg-timeout", type=int, default=40)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--sharing", default="")
p.add_argument("--mp-context", default=None)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--mmap", action="store_true", help="memory-map the .npy files instead of reading them")
args = p.parse_args()

VOCAB = 500
TAGS = {"web": 0, "books": 1, "code": 2}

if args.sharing:
    torch.multiprocessing.set_sharing_strategy(args.sharing)


def setup():
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


rank, world = setup()

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.log_style == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


class TokenFiles(Dataset):
    """One .npy token file per sample, plus a tag from labels.json."""

    def __init__(self, root, seq, fault="none", is_fault_rank=False, fault_index=-1):
        self.root = root
        self.files = sorted(f for f in os.listdir(root) if f.endswith(".npy")) if os.path.isdir(root) else []
        with open(os.path.join(root, "labels.json")) if os.path.exists(os.path.join(root, "labels.json")) else open(os.devnull) as fh:
            txt = fh.read()
            self.tags = json.loads(txt) if txt else {}
        self.seq = seq
        self.fault = fault
        self.is_fault_rank = is_fault_rank
        self.fault_index = fault_index
        self._handles = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        name = self.files[i]
        path = os.path.join(self.root, name)
        if self.fault == "fd_leak":
            # memory-map style reader that keeps every file handle open ("for speed")
            fh = open(path, "rb")
            self._handles.append(fh)
            arr = np.load(fh)
        elif self.fault == "raw_reader":
            # reader that trusts the header and reads the rest of the file as int64
            with open(path, "rb") as fh:
                fh.seek(128)
                arr = np.frombuffer(fh.read(), dtype=np.int64).reshape(-1)
        elif args.mmap:
            arr = np.load(path, mmap_mode="r")
        else:
            arr = np.load(path)
        if self.fault == "segv" and self.is_fault_rank and i == self.fault_index:
            # native tokenizer extension bug, emulated with a NULL read from C
            ctypes.string_at(0)
        toks = torch.from_numpy(arr).long() if args.mmap else torch.from_numpy(arr.astype(np.int64))
        if self.fault == "ragged":
            x = toks  # forgot to crop/pad to self.seq
        else:
            x = toks[: self.seq + 1]
        tag = TAGS[self.tags[name]]
        if args.sleep:
            time.sleep(args.sleep)
        return x[:-1], x[1:], tag


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.head = nn.Linear(64, VOCAB)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def main():
    torch.manual_seed(0)
    shard = os.path.join(args.data, f"shard{rank}")
    ds = TokenFiles(shard, args.seq, args.fault, rank == args.fault_rank, args.fault_index)
    say(f"dataset {shard}: {len(ds)} samples, world={world}")
    sampler = None  # each rank reads its own pre-split shard directory
    collate = None
    if args.fault == "lambda_collate":
        collate = lambda b: tuple(torch.stack([s[k] for s in b]) if k < 2 else torch.tensor([s[k] for s in b]) for k in range(3))
    dl = DataLoader(ds, batch_size=args.batch, shuffle=(sampler is None), sampler=sampler,
                    num_workers=args.workers, timeout=args.loader_timeout,
                    persistent_workers=args.persistent, collate_fn=collate,
                    multiprocessing_context=args.mp_context, drop_last=True)
    model = TinyLM()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.9)
    step = 0
    replay = []  # hard-example replay buffer (fault: keeps every loader batch alive)
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        it = dl
        if args.log_style == "tqdm" and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", dynamic_ncols=False, ncols=90)
        t0 = time.time()
        for i, (x, y, tag) in enumerate(it):
            if args.fault == "cache_batches" and rank == args.fault_rank:
                replay.append((x, y, tag))
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 5 == 0 and args.log_style != "tqdm":
                say(f"epoch {ep} step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} "
                    f"tags {tag.tolist()[:4]} {(time.time()-t0)/(i+1):.3f}s/it")
            if args.steps and i + 1 >= args.steps:
                break
        say(f"epoch {ep} done, {step} steps")
    if world > 1:
        t = torch.tensor([loss.item()])
        dist.all_reduce(t)
        say(f"final mean loss {t.item()/world:.4f}")
        dist.barrier()
        dist.destroy_process_group()
    say("training finished")


if __name__ == "__main__":
    main()
