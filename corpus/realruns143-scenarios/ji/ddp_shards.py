"""DDP text-classifier training over per-rank jsonl shards (one shard file per rank).
Faults are injected in the DATA / environment by `prep` flags, the training code is the same."""
import argparse, json, os, sys, time, math, logging, random
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="data/shards")
p.add_argument("--out-dir", default="out/ddp")
p.add_argument("--prep", action="store_true", help="write shards then exit")
p.add_argument("--world", type=int, default=4)
p.add_argument("--n-per-rank", type=int, default=96)
p.add_argument("--short-rank", type=int, default=-1, help="prep: this rank's shard gets --short-n samples")
p.add_argument("--short-n", type=int, default=40)
p.add_argument("--bad-rank", type=int, default=-1)
p.add_argument("--bad-kind", default="none")
p.add_argument("--bad-pos", type=int, default=50)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--micro", type=int, default=1, help="micro-batches per batch")
p.add_argument("--vocab", type=int, default=0, help="0 = infer from shard")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--resume", action="store_true")
p.add_argument("--cache-dir", default="")
p.add_argument("--sample-weights", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--barrier-check", action="store_true", help="monitored_barrier at end of epoch")
p.add_argument("--lock-wait", action="store_true", help="wait for tokenizer cache lock like HF")
p.add_argument("--pidfile-dir", default="")
p.add_argument("--max-open", type=int, default=0)
p.add_argument("--tag", default="")
p.add_argument("--metrics-db", default="")
p.add_argument("--log-every", type=int, default=4)
p.add_argument("--init-from", default="", help="pretrained weights (node-local scratch path, {rank} allowed)")
p.add_argument("--span-task", action="store_true", help="also train the span-start head where shards have span labels")
p.add_argument("--stage-dir", default="", help="write checkpoints to node-local staging dir, then rename into out-dir")
args = p.parse_args()

VOCAB, SEQ, NCLS = 200, 16, 5

def prep():
    os.makedirs(args.data_dir, exist_ok=True)
    rng = random.Random(0)
    meta = {"vocab": VOCAB, "seq_len": SEQ, "classes": NCLS}
    for r in range(args.world):
        n = args.short_n if r == args.short_rank else args.n_per_rank
        path = os.path.join(args.data_dir, f"shard_{r:05d}.jsonl")
        with open(path, "w") as f:
            for i in range(n):
                toks = [rng.randrange(1, VOCAB) for _ in range(SEQ)]
                lab = sum(toks) % NCLS
                rec = {"id": f"r{r}-{i}", "tokens": toks, "label": lab, "weight": 1.0,
                       "span": (-1 if (r == args.bad_rank and args.bad_kind == "nospan") else toks[0] % SEQ)}
                if r == args.bad_rank and i == args.bad_pos:
                    k = args.bad_kind
                    if k == "token":      # tokenizer of a different vocab wrote this sample
                        rec["tokens"][3] = VOCAB + 57
                    elif k == "len":      # sample not truncated
                        rec["tokens"] = rec["tokens"] + [rng.randrange(1, VOCAB) for _ in range(5)]
                    elif k == "weight":   # upstream weighting divided by a zero count
                        rec["weight"] = float("inf")
                    elif k == "hugetok":  # id written by a buggy hashing tokenizer
                        rec["tokens"][0] = 2_900_000_000
                    elif k == "trunc":    # writer killed mid-record
                        line = json.dumps(rec)
                        f.write(line[: len(line) // 2] + "\n"); continue
                f.write(json.dumps(rec) + "\n")
        m = dict(meta)
        if r == args.bad_rank and args.bad_kind == "vocab":
            pass
        with open(path + ".meta.json", "w") as f:
            json.dump(m, f)
    print(f"wrote {args.world} shards to {args.data_dir}")

if args.prep:
    prep(); sys.exit(0)

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
local_rank = int(os.environ.get("LOCAL_RANK", rank))
if args.use_logging:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda *a: print(f"[rank{rank}]", *a, flush=True)

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
torch.manual_seed(0)
if args.pidfile_dir:
    os.makedirs(args.pidfile_dir, exist_ok=True)
    with open(os.path.join(args.pidfile_dir, f"rank{rank}.pid"), "w") as f: f.write(str(os.getpid()))

class ShardDataset(Dataset):
    """Lazy jsonl reader: keeps byte offsets, parses a record on access."""
    def __init__(self, path):
        self.path = path
        self.offsets = []
        with open(path, "rb") as f:
            off = 0
            for line in f:
                self.offsets.append(off); off += len(line)
        self._fh = None
    def __len__(self): return len(self.offsets)
    def __getitem__(self, i):
        if self._fh is None: self._fh = open(self.path, "rb")
        self._fh.seek(self.offsets[i])
        rec = json.loads(self._fh.readline())
        return {"tokens": torch.tensor(rec["tokens"]), "label": torch.tensor(rec["label"]),
                "weight": torch.tensor(rec["weight"], dtype=torch.float32),
                "span": torch.tensor(rec.get("span", -1))}

shard = os.path.join(args.data_dir, f"shard_{rank:05d}.jsonl")
if args.lock_wait:
    lock = os.path.join(args.data_dir, f"shard_{rank:05d}.jsonl.lock")
    t0 = time.time()
    while os.path.exists(lock):
        if int(time.time() - t0) % 10 == 0:
            log(f"waiting for lock {lock} held by another process ...")
        time.sleep(1)
ds = ShardDataset(shard)
meta = json.load(open(shard + ".meta.json"))
if args.vocab:
    vocab = args.vocab
else:
    # size the embedding from the tokens actually present in this shard
    mx = 0
    for i in range(len(ds)):
        mx = max(mx, int(ds[i]["tokens"].max()))
    vocab = mx + 1
log(f"shard={shard} samples={len(ds)} vocab={vocab}")
if args.cache_dir:
    cdir = args.cache_dir.format(rank=rank)
    os.makedirs(cdir, exist_ok=True)
    cpath = os.path.join(cdir, f"tokens_{rank:05d}.pt")
    log(f"writing token cache {cpath}")
    allt = torch.stack([ds[i]["tokens"] for i in range(len(ds))])
    with open(cpath, "wb") as fh:
        for row in allt:
            fh.write(row.numpy().tobytes())
    log(f"token cache written ({allt.numel()*8} bytes)")
if args.metrics_db:
    import sqlite3
    db = sqlite3.connect(args.metrics_db, timeout=5)
    db.execute("create table if not exists m (rank int, step int, loss real)")
    db.commit()
if args.barrier_check:
    dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
dl = DataLoader(ds, batch_size=args.bs, shuffle=False, num_workers=args.workers)

class Classifier(nn.Module):
    def __init__(self, vocab, dim=32, span_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.ff = nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, NCLS))
        if span_head:
            self.span_head = nn.Linear(dim, 1)
    def forward(self, toks, with_span=False):
        h = self.emb(toks)
        out = self.ff(h.mean(1))
        if with_span:
            return out, self.span_head(h).squeeze(-1)
        return out

model = Classifier(vocab, span_head=args.span_task)
if args.init_from:
    ipath = args.init_from.format(rank=rank)
    log(f"initialising from {ipath}")
    model.load_state_dict(torch.load(ipath, map_location="cpu"))
ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
os.makedirs(args.out_dir, exist_ok=True)
start_epoch = 0
if args.resume:
    ck = os.path.join(args.out_dir, f"optim_rank{rank}.pt")
    log(f"resuming optimizer state from {ck}")
    st = torch.load(ck)
    opt.load_state_dict(st["optim"]); start_epoch = st["epoch"] + 1

it = None
if args.progress:
    from tqdm import tqdm
step = 0
for ep in range(start_epoch, args.epochs):
    bar = tqdm(dl, desc=f"rank{rank} ep{ep}", disable=not args.progress, position=0, leave=True, mininterval=0.5) if args.progress else dl
    tot = 0.0; nb = 0
    for batch in bar:
        toks, y, w = batch["tokens"], batch["label"], batch["weight"]
        if args.micro > 1:
            mb = args.bs // args.micro
            toks = toks.view(args.micro, mb, -1); y = y.view(args.micro, mb); w = w.view(args.micro, mb)
        else:
            toks, y, w = toks[None], y[None], w[None]
        opt.zero_grad()
        span = batch["span"]
        has_span = args.span_task and bool((span >= 0).any())
        for m in range(toks.shape[0]):
            if has_span:   # multi-task batch: span-start head + classifier
                logits, span_logits = ddp(toks[m], with_span=True)
                loss = (F.cross_entropy(logits, y[m], reduction="none") * w[m]).mean() / toks.shape[0]
                mask = span >= 0
                loss = loss + 0.5 * F.cross_entropy(span_logits[mask], span[mask])
            else:
                logits = ddp(toks[m])
                loss = (F.cross_entropy(logits, y[m], reduction="none") * w[m]).mean() / toks.shape[0]
            loss.backward()
        opt.step()
        tot += loss.item() * toks.shape[0]; nb += 1; step += 1
        if step % args.log_every == 0:
            log(f"epoch {ep} step {step} loss {loss.item()*toks.shape[0]:.4f}")
        if args.metrics_db and step % 4 == 0:
            db.execute("insert into m values (?,?,?)", (rank, step, loss.item())); db.commit()
        if args.save_every and step % args.save_every == 0:
            pth = os.path.join(args.out_dir, f"optim_rank{rank}.pt")
            torch.save({"optim": opt.state_dict(), "epoch": ep}, pth)
    mean = torch.tensor([tot / max(nb, 1)])
    if args.barrier_check:
        dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
    dist.all_reduce(mean); mean /= world
    log(f"epoch {ep} done: batches={nb} global mean loss {mean.item():.4f}")
    if rank == 0 or args.tag == "per-rank-ckpt":
        pth = os.path.join(args.out_dir, f"optim_rank{rank}.pt")
        if args.stage_dir:
            sd = args.stage_dir.format(rank=rank); os.makedirs(sd, exist_ok=True)
            tmp = os.path.join(sd, f"optim_rank{rank}.pt.tmp")
            torch.save({"optim": opt.state_dict(), "epoch": ep}, tmp)
            os.rename(tmp, pth)
        else:
            torch.save({"optim": opt.state_dict(), "epoch": ep}, pth)
        log(f"saved {pth}")
        if rank == 0:
            torch.save(model.state_dict(), os.path.join(args.out_dir, "model.pt"))
            log(f"saved {args.out_dir}/model.pt")
dist.barrier()
log("training finished")
dist.destroy_process_group()
