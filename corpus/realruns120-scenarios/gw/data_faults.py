"""Sequence-classification trainer with a custom Dataset / augmentation / collate.
--fault selects the bug, --fault-rank the rank whose data shard triggers it."""
import os, sys, time, glob, random, argparse, warnings
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(__file__))
from common import get_logger, init_dist, MLP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=30)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--n-per-rank", type=int, default=320)
p.add_argument("--crop", type=int, default=48)
p.add_argument("--data-root", default="/work/rr120/gw/data")
p.add_argument("--val-root", default="")
p.add_argument("--gain-aug", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--loader-timeout", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

log = get_logger("data")
rank, world = init_dist(args.pg_timeout)
torch.manual_seed(0); random.seed(rank); np.random.seed(rank)
D = 16

def make_shard(r, n):
    g = np.random.RandomState(100 + r)
    lens = g.randint(56, 72, size=n)
    if args.fault == "crop" and r == args.fault_rank:
        # a handful of short utterances that the length filter did not remove
        idx = [n // 2 + 3]
        lens[idx] = 40
    xs = [g.randn(L, D).astype(np.float32) for L in lens]
    ys = [int((x[:, :4].sum() > 0) * 1 + (x[:, 4:8].sum() > 0) * 2) for x in xs]
    return xs, ys

class RandomCrop:
    def __init__(self, size): self.size = size
    def __call__(self, x):
        L = x.shape[0]
        if L <= self.size:
            return x          # too short: keep as is
        s = random.randint(0, L - self.size)
        return x[s:s + self.size]

class RandomGain:
    """random gain in dB, capped"""
    def __call__(self, x):
        g = min(np.exp(np.float32(random.gauss(0, 40))), np.float32(4.0))
        return x * g

class TimeMask:
    def __init__(self, width): self.width = width
    def __call__(self, x):
        if random.random() > 0.0015:   # SpecAugment-style: applied to a few samples only
            return x
        L = x.shape[0]
        w = self.width
        s = random.randrange(0, L - w)
        x = x.copy(); x[s:s + w] = 0
        return x

class SeqDataset(Dataset):
    def __init__(self, xs, ys, transforms):
        self.xs, self.ys, self.t = xs, ys, transforms
    def __len__(self): return len(self.xs)
    def __getitem__(self, i):
        x = self.xs[i]
        for t in self.t: x = t(x)
        return torch.from_numpy(np.ascontiguousarray(x)), self.ys[i]

class NpyDataset(Dataset):
    """one .npy per utterance under data_root/shard{rank}/"""
    def __init__(self, root, transforms, keep_open=False):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.t = transforms
        self.keep_open = keep_open
        self._fh = {}
        self.labels = {}
        lab = os.path.join(root, "labels.txt")
        if os.path.exists(lab):
            for line in open(lab):
                f, y = line.split(); self.labels[f] = int(y)
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        f = self.files[i]
        if self.keep_open:
            if f not in self._fh:
                self._fh[f] = open(f, "rb")   # cache handles for speed
            fh = self._fh[f]; fh.seek(0)
            x = np.load(fh)
        else:
            x = np.load(f)
        for t in self.t: x = t(x)
        return torch.from_numpy(np.ascontiguousarray(x)), self.labels.get(os.path.basename(f), 0)

def worker_init_fn(wid):
    info = torch.utils.data.get_worker_info()
    log.info("dataloader worker %d started (pid %d)", wid, os.getpid())
    if os.environ.get("PIDDIR"):
        open(os.path.join(os.environ["PIDDIR"], f"rank{rank}_w{wid}.pid"), "w").write(str(os.getpid()))

class Net(nn.Module):
    def __init__(self, bn=False):
        super().__init__()
        self.proj = nn.Linear(D, 32)
        self.mlp = MLP(d_in=32, hidden=64, n_cls=4, bn=bn)
    def forward(self, x):
        return self.mlp(F.gelu(self.proj(x)).mean(1))

transforms = [RandomCrop(args.crop)] + ([RandomGain()] if args.gain_aug else [])
if args.fault == "timemask":
    transforms.append(TimeMask(args.crop // 4 + (40 if rank == args.fault_rank else 0)))
file_backed = args.fault in ("fds", "corrupt", "empty_shard", "worker_kill", "stuck_read")
if file_backed:
    root = os.path.join(args.data_root, f"shard{rank}")
    ds = NpyDataset(root, transforms, keep_open=(args.fault == "fds"))
    log.info("indexed %d utterances under %s", len(ds), root)
else:
    n = args.n_per_rank - (args.bs - 1 if args.fault == "bn1" and rank == args.fault_rank else 0)
    xs, ys = make_shard(rank, n)
    ds = SeqDataset(xs, ys, transforms)
    log.info("shard %d/%d: %d utterances", rank, world, len(ds))

dl = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers,
                drop_last=False, worker_init_fn=worker_init_fn if args.workers else None,
                timeout=args.loader_timeout, persistent_workers=args.workers > 0)
model = Net(bn=(args.fault in ("bn1",)))
model = DDP(model) if world > 1 else model
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
total = args.epochs * len(dl)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=max(total, 1))
log.info("model params: %d, steps/epoch %d, total %d", sum(p.numel() for p in model.parameters()), len(dl), total)

step = 0
for epoch in range(args.epochs):
    model.train()
    it = dl
    if args.use_tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"epoch {epoch}", dynamic_ncols=False, ncols=100)
    t0 = time.time(); run_loss = 0.0; correct = 0; seen = 0
    for x, y in it:
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); step += 1
        run_loss += loss.item(); correct += (logits.argmax(1) == y).sum().item(); seen += len(y)
        if step % 10 == 0:
            log.info("epoch %d step %d loss %.4f acc %.3f lr %.2e %.1f samples/s", epoch, step,
                     run_loss / 10, correct / max(seen, 1), sched.get_last_lr()[0], seen / (time.time() - t0))
            run_loss = 0.0
    if args.val_root and rank == 0:
        vds = NpyDataset(args.val_root, [RandomCrop(args.crop)], keep_open=(args.fault == "fds"))
        vdl = DataLoader(vds, batch_size=args.bs)
        m = model.module if world > 1 else model
        m.eval(); vc = vn = 0
        with torch.no_grad():
            for vx, vy in vdl:
                vc += (m(vx).argmax(1) == vy).sum().item(); vn += len(vy)
        m.train()
        log.info("epoch %d val acc %.4f (%d utterances)", epoch, vc / max(vn, 1), vn)
    if world > 1:
        acc = torch.tensor([correct, seen], dtype=torch.float64)
        dist.all_reduce(acc)
        correct, seen = acc.tolist()
    log.info("epoch %d done: train acc %.4f", epoch, correct / max(seen, 1))
if world > 1:
    dist.barrier(); dist.destroy_process_group()
log.info("training finished")
