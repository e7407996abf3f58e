"""Small DDP trainer over per-rank shards (gloo, CPU). Launch with torchrun."""
import argparse, json, logging, math, os, sys, time, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--data", default="data")
p.add_argument("--format", default="npz")
p.add_argument("--node-local", action="store_true", help="read shard and config from data/nodelocal/node<rank>")
p.add_argument("--model", default="mlp", choices=["mlp", "lm", "branchy"])
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--log-style", default="plain", choices=["plain", "logging"])
p.add_argument("--tqdm", action="store_true")
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--num-workers", type=int, default=0)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-mode", default="rank0", choices=["rank0", "sharded"])
p.add_argument("--resume", default="", help="checkpoint path; {rank} expanded")
p.add_argument("--nan-guard", action="store_true")
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--eval-gather", action="store_true")
p.add_argument("--sched", default="none", choices=["none", "onecycle", "cosine"])
p.add_argument("--optim", default="sgd", choices=["sgd", "adam", "adamw"])
p.add_argument("--sparse-emb", action="store_true")
p.add_argument("--syncbn", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--prefetch-cache", type=int, default=0, help="preallocate a feature cache of this many rows per sample group")
p.add_argument("--noisy", action="store_true", help="emit the usual startup warnings")
p.add_argument("--shuffle", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--resume-nonstrict", action="store_true", help="warm-start weights only, tolerate key differences")
p.add_argument("--aux-threshold", type=float, default=0.9, help="branchy model: batches with mean |x| above this use the aux head")
p.add_argument("--report", default="", help="per-rank json report path; {rank} expanded")
p.add_argument("--skip-nonfinite", action="store_true", help="skip optimizer step when grad norm is inf/nan")
p.add_argument("--slow-start-rank", type=int, default=-1, help="this rank does slow preprocessing before joining")
p.add_argument("--slow-start", type=float, default=0.0)
a = p.parse_args()

if int(os.environ.get("RANK", "-1")) == a.slow_start_rank:
    print(f"[rank{a.slow_start_rank}] building feature statistics before joining the group ...", flush=True)
    time.sleep(a.slow_start)

dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()

class RankFilter(logging.Filter):
    def filter(self, rec):
        rec.rank = rank
        return True

if a.log_style == "logging":
    h = logging.StreamHandler(sys.stdout)
    h.addFilter(RankFilter())
    h.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d [%(levelname)s] [rank %(rank)d/%(world)s] %(name)s: %(message)s".replace("%(world)s", str(world)), "%Y-%m-%d %H:%M:%S"))
    logging.basicConfig(level=logging.INFO, handlers=[h])
    log = logging.getLogger("train").info
    warn = logging.getLogger("train").warning
    logging.captureWarnings(True)
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)
    warn = log

torch.manual_seed(0)
base = os.path.join(a.data, "nodelocal", f"node{rank}") if a.node_local else a.data
cfg = json.load(open(os.path.join(base, "model.json")))
log(f"world={world} backend={dist.get_backend()} data={base} cfg={cfg}")

# ---------------- data ----------------
class NpzShard(Dataset):
    def __init__(self, path):
        z = np.load(path)
        self.x, self.y = torch.from_numpy(z["x"]), torch.from_numpy(z["y"])
    def __len__(self): return len(self.y)
    def __getitem__(self, i): return self.x[i], self.y[i]

class RecordShard(Dataset):
    """one .npy per sample, label from index.jsonl"""
    def __init__(self, d):
        self.d = d
        self.index = [json.loads(l) for l in open(os.path.join(d, "index.jsonl"))]
    def __len__(self): return len(self.index)
    def __getitem__(self, i):
        rec = self.index[i]
        arr = np.load(os.path.join(self.d, rec["file"]))
        return torch.from_numpy(arr[:-1].copy()), torch.tensor(rec["label"])

class PartShard(Dataset):
    """part-*.bin files; file handles cached for fast random access"""
    def __init__(self, d, cols):
        self.d, self.cols = d, cols
        self.parts = sorted(os.listdir(d))
        self.rows = [os.path.getsize(os.path.join(d, f)) // (4 * cols) for f in self.parts]
        self.offsets = np.cumsum([0] + self.rows)
        self._fh = {}
    def __len__(self): return int(self.offsets[-1])
    def _open(self, k):
        if k not in self._fh:
            self._fh[k] = open(os.path.join(self.d, self.parts[k]), "rb")
        return self._fh[k]
    def __getitem__(self, i):
        k = int(np.searchsorted(self.offsets, i, side="right") - 1)
        f = self._open(k)
        f.seek((i - self.offsets[k]) * 4 * self.cols)
        row = np.frombuffer(f.read(4 * self.cols), dtype=np.float32)
        return torch.from_numpy(row[:-1].copy()), torch.tensor(int(row[-1]))

class MemmapShard(Dataset):
    def __init__(self, path, meta):
        m = json.load(open(meta))
        self.mm = np.memmap(path, dtype=np.float32, mode="r", shape=(m["rows"], m["cols"]))
    def __len__(self): return self.mm.shape[0]
    def __getitem__(self, i):
        row = torch.from_numpy(np.array(self.mm[i]))
        return row[:-1], row[-1].long()

class TokenShard(Dataset):
    def __init__(self, path):
        self.ids = torch.from_numpy(np.load(path)["ids"])
    def __len__(self): return len(self.ids)
    def __getitem__(self, i): return self.ids[i, :-1], self.ids[i, 1:]

class DocShard(Dataset):
    def __init__(self, path):
        z = np.load(path)
        self.ids, self.offs = torch.from_numpy(z["ids"]), z["offsets"]
    def __len__(self): return len(self.offs) - 1
    def __getitem__(self, i):
        d = self.ids[self.offs[i]:self.offs[i + 1]]
        return d[:-1], d[1:]

def pad_collate(batch):
    L = max(len(x) for x, _ in batch)
    X = torch.zeros(len(batch), L, dtype=torch.long)
    Y = torch.full((len(batch), L), -100, dtype=torch.long)
    for i, (x, y) in enumerate(batch):
        X[i, :len(x)] = x
        Y[i, :len(y)] = y
    return X, Y

collate = None
if a.format == "tokvar":
    ds = DocShard(os.path.join(base, f"shard-{rank}.npz"))
    collate = pad_collate
elif a.format == "npz":
    ds = NpzShard(os.path.join(base, f"shard-{rank}.npz"))
elif a.format == "records":
    ds = RecordShard(os.path.join(base, f"shard-{rank}"))
elif a.format == "parts":
    ds = PartShard(os.path.join(base, f"shard-{rank}"), cfg["features"] + 1)
elif a.format == "memmap":
    ds = MemmapShard(os.path.join(base, f"shard-{rank}.bin"), os.path.join(base, f"shard-{rank}.json"))
elif a.format == "tokens":
    ds = TokenShard(os.path.join(base, f"shard-{rank}.npz"))
log(f"loaded shard with {len(ds)} samples")

dl = DataLoader(ds, batch_size=a.bs, shuffle=a.shuffle, num_workers=a.num_workers, drop_last=False, collate_fn=collate)

# ---------------- model ----------------
class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Linear(c["features"], c["hidden"])
        self.bn = nn.BatchNorm1d(c["hidden"])
        self.fc2 = nn.Linear(c["hidden"], c["classes"])
    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))

class Branchy(MLP):
    """MLP with an auxiliary head used only for 'hard' batches"""
    def __init__(self, c):
        super().__init__(c)
        self.aux = nn.Linear(c["hidden"], c["classes"])
    def forward(self, x):
        h = F.relu(self.bn(self.fc1(x)))
        if x.abs().mean() < a.aux_threshold:      # easy batch: skip the aux head
            return self.fc2(h)
        return self.fc2(h) + 0.1 * self.aux(h)

class TinyLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.emb = nn.Embedding(c["vocab"], c["hidden"], sparse=a.sparse_emb)
        self.rnn = nn.GRU(c["hidden"], c["hidden"], batch_first=True)
        self.head = nn.Linear(c["hidden"], c["vocab"])
    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.head(h)

model = {"mlp": MLP, "lm": TinyLM, "branchy": Branchy}[a.model](cfg)
if a.syncbn:
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
n_params = sum(p.numel() for p in model.parameters())
log(f"model {a.model} params={n_params}")
ddp = DDP(model, find_unused_parameters=a.find_unused)

if a.optim == "sgd":
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.9)
elif a.optim == "adam":
    opt = torch.optim.Adam(ddp.parameters(), lr=a.lr * 0.1)
else:
    opt = torch.optim.AdamW(ddp.parameters(), lr=a.lr * 0.1, weight_decay=0.01)

sched = None
if a.sched == "onecycle":
    # total steps from the nominal per-rank shard size
    nominal = math.ceil(cfg.get("nominal_samples_per_rank", 512) / a.bs) * a.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=nominal)
elif a.sched == "cosine":
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.steps)

start_step = 0
if a.resume:
    path = a.resume.format(rank=rank)
    log(f"resuming from {path}")
    ck = torch.load(path, map_location="cpu")
    if a.resume_nonstrict:
        res = model.load_state_dict(ck["model"], strict=False)
        warn(f"load_state_dict(strict=False): {res}")
        warn("optimizer state not restored (warm start); starting optimizer from scratch")
    else:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
    start_step = ck["step"]
    log(f"resumed at step {start_step}")

if a.noisy:
    # the usual startup chatter
    _ = torch.tensor(torch.zeros(3))              # copy-construct warning
    if sched is not None:
        sched.step()                                # scheduler-before-optimizer warning
    nn.utils.clip_grad_norm_([torch.zeros(2, requires_grad=True)], 1.0)

if a.detect_anomaly:
    torch.autograd.set_detect_anomaly(True)

def save_ckpt(step):
    os.makedirs(a.ckpt_dir, exist_ok=True) if rank == 0 else None
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
    if a.ckpt_mode == "rank0":
        if rank == 0:
            path = os.path.join(a.ckpt_dir, f"ckpt-{step:05d}.pt")
            torch.save(state, path)
            log(f"saved checkpoint {path}")
    else:
        d = a.ckpt_dir.format(rank=rank)
        path = os.path.join(d, f"ckpt-{step:05d}-rank{rank}.pt")
        torch.save(state, path)
        log(f"saved shard checkpoint {path}")
    dist.barrier()

it = dl
if a.tqdm:
    from tqdm import tqdm
    it = tqdm(dl, desc=f"rank{rank} epoch 0", disable=False, dynamic_ncols=False, ncols=100, mininterval=0.5)

step = start_step
t0 = time.time()
done = False
for epoch in range(a.epochs):
    for x, y in it:
        if step >= a.steps:
            done = True
            break
        out = ddp(x)
        if a.model == "lm":
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        else:
            loss = F.cross_entropy(out, y)
        if a.nan_guard and not torch.isfinite(loss):
            raise RuntimeError(f"Loss is {loss.item()} at step {step} (rank {rank}); stopping")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = nn.utils.clip_grad_norm_(ddp.parameters(), 5.0)
        if a.skip_nonfinite and not torch.isfinite(gn):
            warn(f"WARNING: non-finite gradient norm ({gn.item()}) at step {step}, skipping optimizer step")
            opt.zero_grad(set_to_none=True)
            step += 1
            continue
        opt.step()
        if sched is not None:
            sched.step()
        step += 1
        if step % a.log_every == 0:
            lr = opt.param_groups[0]["lr"]
            log(f"epoch {epoch} step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {lr:.5f} {(time.time()-t0)/step:.3f}s/it")
        if a.ckpt_dir and a.ckpt_every and step % a.ckpt_every == 0:
            save_ckpt(step)
        time.sleep(a.step_sleep)
    if done:
        break

if a.eval_gather:
    # gather per-sample predictions from every rank for global metrics
    with torch.no_grad():
        preds = torch.cat([ddp(x).argmax(-1) for x, _ in DataLoader(ds, batch_size=64)])
    log(f"eval: {preds.numel()} predictions, gathering")
    bufs = [torch.empty_like(preds) for _ in range(world)]
    dist.all_gather(bufs, preds)
    log(f"gathered {sum(b.numel() for b in bufs)} predictions")

if a.report:
    rp = a.report.format(rank=rank)
    log(f"writing run report to {rp}")
    with open(rp, "w") as f:
        json.dump({"rank": rank, "steps": step, "final_loss": float(loss.item())}, f)
    log("report written")

if a.monitored_barrier:
    dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
else:
    dist.barrier()
log(f"finished {step} steps in {time.time()-t0:.1f}s")
dist.destroy_process_group()
