"""Text-classification training whose DataLoader reads one small file per sample.

--fault: none | bad-label-map (KeyError in worker) | no-pad (variable-length, default collate)
         | leak-fds (dataset keeps file handles open) | (worker killed externally: see run cmd)
Runs single-process, or under torchrun with --ddp (DistributedSampler).
"""
import argparse
import json
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jlog  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--root", default="textdata")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--logfmt", default="plain")
p.add_argument("--ddp", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--make", type=int, default=0, help="create N sample files and exit")
p.add_argument("--slow", type=float, default=0.0)
args = p.parse_args()

if args.make:
    import random
    rnd = random.Random(0)
    os.makedirs(args.root, exist_ok=True)
    words = "the a model loss data train gpu node rank batch token cache slow fast good bad".split()
    for i in range(args.make):
        lab = rnd.choice(["pos", "neg", "neutral"])
        with open(os.path.join(args.root, f"{i:05d}.json"), "w") as f:
            json.dump({"text": " ".join(rnd.choice(words) for _ in range(rnd.randrange(5, 20))),
                       "label": lab}, f)
    # a few samples from the newer annotation batch
    for i in range(args.make - 5, args.make):
        d = json.load(open(os.path.join(args.root, f"{i:05d}.json")))
        d["label"] = "mixed"
        json.dump(d, open(os.path.join(args.root, f"{i:05d}.json"), "w"))
    print("made", args.make)
    sys.exit(0)

log = jlog.setup(args.logfmt, "data")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

rank, world = 0, 1
if args.ddp:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()

LABELS = {"pos": 0, "neg": 1, "neutral": 2}
VOCAB = {}


def tok(text):
    return [VOCAB.setdefault(w, len(VOCAB) % 200 + 1) for w in text.split()]


class FileDataset(Dataset):
    def __init__(self, root):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".json"))
        self._open = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if args.slow:
            time.sleep(args.slow)
        f = open(self.files[i])
        if args.fault == "leak-fds" and rank == args.fault_rank:
            # handles kept for "lazy re-reading" (never closed)
            self._open.append(f)
            d = json.loads(f.read())
        else:
            with f:
                d = json.load(f)
        ids = tok(d["text"])
        if args.fault == "bad-label-map" and rank == args.fault_rank:
            y = LABELS[d["label"]]
        else:
            if d["label"] not in LABELS:
                log.warning("unknown label %r in %s, mapping to 'neutral'", d["label"], os.path.basename(self.files[i]))
            y = LABELS.get(d["label"], 2)
        if args.fault == "no-pad" and rank == args.fault_rank:
            x = torch.tensor(ids)
        else:
            x = torch.zeros(24, dtype=torch.long)
            x[: min(24, len(ids))] = torch.tensor(ids[:24])
        return x, torch.tensor(y)


class Clf(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(256, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        return self.out(self.emb(x))


ds = FileDataset(args.root)
if args.fault == "bad-label-map" and rank == args.fault_rank:
    ds.files = ds.files[::-1]  # this rank's shard order puts the new-batch files first
sampler = None
if args.ddp:
    from torch.utils.data.distributed import DistributedSampler
    sampler = DistributedSampler(ds, shuffle=False)
def _winit(wid):
    if os.environ.get("PIDFILE_DIR"):
        with open(os.path.join(os.environ["PIDFILE_DIR"], f"rank{rank}-worker{wid}.pid"), "w") as f:
            f.write(str(os.getpid()))


dl = DataLoader(ds, batch_size=8, num_workers=args.workers, sampler=sampler,
                shuffle=False, persistent_workers=False, worker_init_fn=_winit if args.workers else None)
model = Clf()
if args.ddp:
    model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
log.info("dataset %s: %d files, %d batches/epoch, workers=%d", args.root, len(ds), len(dl), args.workers)
for ep in range(args.epochs):
    if sampler:
        sampler.set_epoch(ep)
    it = dl
    if args.progress:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"epoch {ep}", mininterval=0, disable=(rank != 0 and args.fault == "none"))
    tot = 0.0
    for i, (x, y) in enumerate(it):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += float(loss)
        if i % 5 == 0 and not args.progress:
            log.info("epoch %d batch %d loss %.4f", ep, i, float(loss))
    log.info("epoch %d done mean_loss %.4f", ep, tot / max(1, len(dl)))
log.info("training complete")
if args.ddp:
    dist.destroy_process_group()
