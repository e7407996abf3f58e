"""DDP text-classification-ish loop with a DataLoader using worker processes.

--fault: none | unseen_label | collate | slow (for external kill of a worker)
"""
import argparse
import os
import random
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=16)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--workdir", default="/work/rr69/bd/tmp/dl")
p.add_argument("--sleep", type=float, default=0.05)
args = p.parse_args()

LABELS = {"neg": 0, "neu": 1, "pos": 2}
VOCAB = 100


def make_records(rank, n, fault):
    rnd = random.Random(100 + rank)
    recs = []
    for i in range(n):
        length = 16 if fault != "collate" else rnd.randint(10, 20)
        toks = [rnd.randrange(1, VOCAB) for _ in range(length)]
        lab = rnd.choice(list(LABELS))
        if fault == "unseen_label" and rank == args.fault_rank and i == 77:
            lab = "mixed"  # annotator used a label that is not in the schema
        recs.append({"tokens": toks, "label": lab})
    return recs


class JsonlDataset(Dataset):
    def __init__(self, recs, fault):
        self.recs = recs
        self.fault = fault

    def __len__(self):
        return len(self.recs)

    def __getitem__(self, i):
        r = self.recs[i]
        if self.fault == "slow":
            time.sleep(0.02)
        return torch.tensor(r["tokens"]), torch.tensor(LABELS[r["label"]])


class BagModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        return self.out(self.emb(x))


@record
def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    os.makedirs(args.workdir, exist_ok=True)
    print(f"[rank{rank}] world={world} pid={os.getpid()} workers={args.workers}", flush=True)
    recs = make_records(rank, 400, args.fault)
    if args.fault == "collate" and rank != args.fault_rank:
        # other ranks read the pre-padded (fixed length) export
        recs = [{"tokens": (r["tokens"] + [0] * 20)[:16], "label": r["label"]} for r in recs]
    ds = JsonlDataset(recs, args.fault)
    dl = DataLoader(ds, batch_size=8, shuffle=False, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    torch.manual_seed(0)
    model = DDP(BagModel())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
    if args.fault == "none":
        sched.step()  # warm start of the schedule
    step = 0
    while step < args.steps:
        for xb, yb in dl:
            if step == 1 and args.workers > 0:
                with open(os.path.join(args.workdir, f"workers.rank{rank}"), "w") as f:
                    f.write(" ".join(str(w.pid) for w in dl._iterator._workers))
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if rank == 0 and step % 4 == 0:
                print(f"[rank0] step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}", flush=True)
            step += 1
            time.sleep(args.sleep)
            if step >= args.steps:
                break
    dist.barrier()
    print(f"[rank{rank}] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
