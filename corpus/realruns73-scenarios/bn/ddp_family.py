"""Tiny DDP training loop with selectable log format and injected real faults.
Launch with torchrun (env://). Flags choose the fault, the rank and the step."""
import argparse, os, sys, json, time, logging, warnings, datetime, resource, signal, traceback
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--fmt", default="plain", choices=["plain", "json", "logging", "rank0"])
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data-dir", default="/work/rr72/bn/data")
p.add_argument("--ckpt-dir", default="/work/rr72/bn/ckpt")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--resume", default="")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--alarms", action="store_true")
p.add_argument("--cache-dir", default="")
p.add_argument("--run-name", default="tinylm")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
local_rank = int(os.environ.get("LOCAL_RANK", 0))

# ---------------- logging setup ----------------
class JsonFormatter(logging.Formatter):
    def format(self, rec):
        d = {"ts": datetime.datetime.utcfromtimestamp(rec.created).isoformat(timespec="milliseconds") + "Z",
             "level": rec.levelname, "rank": rank, "world_size": world, "logger": rec.name,
             "message": rec.getMessage()}
        if rec.exc_info:
            d["exc_type"] = rec.exc_info[0].__name__
            d["traceback"] = self.formatException(rec.exc_info)
        return json.dumps(d)

class RankFilter(logging.Filter):
    def filter(self, rec):
        rec.rank = rank
        return True

class Rank0Only(logging.Filter):
    def filter(self, rec):
        return rank == 0

log = logging.getLogger("train")
h = logging.StreamHandler(sys.stdout)
if args.fmt == "json":
    h.setFormatter(JsonFormatter())
elif args.fmt == "logging":
    h.addFilter(RankFilter())
    h.setFormatter(logging.Formatter("%(asctime)s [rank%(rank)d] %(levelname)s %(name)s: %(message)s"))
elif args.fmt == "rank0":
    h.addFilter(Rank0Only())
    h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
else:
    h.setFormatter(logging.Formatter(f"[rank{rank}] %(message)s"))
log.addHandler(h); log.setLevel(logging.INFO); log.propagate = False
if args.fmt == "json":
    def _hook(t, v, tb):
        log.error("uncaught exception", exc_info=(t, v, tb)); sys.stdout.flush()
    sys.excepthook = _hook

# ---------------- data ----------------
VOCAB = 128; SEQ = 16

def make_shards():
    os.makedirs(args.data_dir, exist_ok=True)
    for r in range(world):
        fn = os.path.join(args.data_dir, f"shard_{r:03d}.pt")
        if not os.path.exists(fn):
            g = torch.Generator().manual_seed(r)
            torch.save({"tokens": torch.randint(0, VOCAB, (64, SEQ), generator=g)}, fn)

class ShardDataset(Dataset):
    def __init__(self, shard_file, bad_idx=None, kind=None):
        self.shard_file = shard_file
        self.tokens = torch.load(shard_file)["tokens"]
        self.bad_idx = bad_idx; self.kind = kind
        self.meta = {i: {"len": SEQ} for i in range(len(self.tokens))}
        if kind == "missing-meta":
            self.meta.pop(bad_idx)
        self.handles = []
    def __len__(self): return len(self.tokens)
    def __getitem__(self, i):
        x = self.tokens[i]
        if self.kind == "vocab" and i == self.bad_idx:
            x = x.clone(); x[5] = VOCAB + 3          # tokenized with a bigger tokenizer
        if self.kind == "ragged" and i == self.bad_idx:
            x = x[: SEQ - 4]                           # short last record, no padding
        if self.kind == "fd-leak":
            self.handles.append(open(self.shard_file, "rb"))   # re-open per sample, never closed
        L = self.meta[i]["len"]
        return x[:L]

class TinyLM(nn.Module):
    def __init__(self, d=32, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, VOCAB)
        self.aux = nn.Linear(d, 4) if extra_head else None
    def forward(self, x, use_aux=False):
        h = self.emb(x); h = h + self.mlp(h)
        out = self.head(h)
        if use_aux and self.aux is not None:
            out = out + self.aux(h).mean() * 0
        return out

def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    if rank == 0:
        make_shards()
    dist.barrier()
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", UserWarning)
    fr = args.fault_rank
    kind = None; bad_idx = None
    if rank == fr and args.fault in ("vocab", "ragged", "missing-meta", "fd-leak"):
        kind = args.fault; bad_idx = args.fault_step * 4 + 1
    shard = os.path.join(args.data_dir, f"shard_{rank:03d}.pt")
    if args.fault == "missing-shard" and rank == fr:
        shard = os.path.join(args.data_dir, f"shard_{rank:03d}.pt".replace(".pt", ".pth"))
    if args.fault == "fd-leak" and rank == fr:
        resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    if args.cache_dir and rank == 0:
        import numpy as np, glob as _g
        os.makedirs(args.cache_dir, exist_ok=True)
        toks = np.concatenate([torch.load(f)["tokens"].numpy() for f in sorted(_g.glob(os.path.join(args.data_dir, "shard_*.pt")))] * 64)
        with open(os.path.join(args.cache_dir, "tokens_cache.bin"), "wb") as fh:
            fh.write(toks.astype(np.uint16).tobytes())
        log.info(f"wrote token cache {toks.shape} to {args.cache_dir}")
    if args.fault == "empty-glob" and rank == fr:
        import glob as _g
        files = sorted(_g.glob(os.path.join(args.data_dir, f"rank{rank}", "*.pt")))   # per-rank subdir layout never materialised on this node
        toks = torch.cat([torch.load(f)["tokens"] for f in files]) if files else torch.empty(0, SEQ, dtype=torch.long)
        ds = ShardDataset(shard); ds.tokens = toks
        log.info(f"found {len(files)} shard files for rank {rank}")
    else:
        ds = ShardDataset(shard, bad_idx, kind)
    dl = DataLoader(ds, batch_size=4, shuffle=(args.fault == "empty-glob"), num_workers=args.workers)
    d = 32
    if args.fault == "model-mismatch" and rank == fr:
        d = 48   # this node picked up a stale config file
    model = TinyLM(d=d, extra_head=(args.fault == "unused-param"))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=(3e3 if args.fault == "nan" else 1e-3))
    if args.alarms:
        try:
            import wandb
        except ImportError:
            log.warning("wandb not importable, falling back to console metrics", exc_info=True)
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order.", UserWarning)
    if args.resume:
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd)
        log.info(f"resumed weights from {args.resume}")
    log.info(f"world_size={world} params={sum(p.numel() for p in model.parameters())} shard={os.path.basename(shard)} samples={len(ds)}")
    it = dl
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, total=min(args.steps, len(dl)), desc="train", file=sys.stderr, mininterval=0)
    t0 = time.time()
    for step, x in enumerate(it):
        if step >= args.steps: break
        if args.fault == "rlimit-as" and rank == fr and step == args.fault_step:
            resource.setrlimit(resource.RLIMIT_AS, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 + 900 * 2**20,) * 2)
            # eval-time logits buffer for a large vocab projection
            buf = torch.empty(4096, 50257, 16)
        if args.fault == "monitored":
            if rank == fr and step == args.fault_step:
                time.sleep(3600)    # stuck syncing the dataset cache from NFS
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=12), wait_all_ranks=True)
        if args.fault == "hang" and rank == fr and step == args.fault_step:
            while True: time.sleep(1)   # waiting on a lock file that never goes away
        logits = ddp(x, use_aux=(args.fault == "unused-param" and rank != fr))
        if args.fault == "shape" and rank == fr and step == args.fault_step:
            loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), x[:, 1:].reshape(-1))
        else:
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward()
        if args.fault == "collective" and rank == fr and step == args.fault_step:
            gn = torch.stack([p.grad.norm() for p in model.parameters()])   # per-tensor norms, others send a scalar
        else:
            gn = torch.stack([p.grad.norm() for p in model.parameters()]).norm().reshape(1)
        dist.all_reduce(gn)
        opt.step()
        lv = loss.item()
        if not torch.isfinite(torch.tensor(lv)):
            raise FloatingPointError(f"Non-finite loss {lv} at step {step} (rank {rank}); aborting run")
        if args.fault == "segv" and rank == fr and step == args.fault_step:
            import ctypes
            ctypes.string_at(0)    # native helper dereferencing a NULL buffer
        if args.step_sleep: time.sleep(args.step_sleep)
        if args.alarms and step == 3 and rank == 0:
            log.warning(f"grad_norm is inf at step {step}, skipping update (loss scale 65536 -> 32768)")
        if step % 2 == 0:
            log.info(f"step {step} loss {lv:.4f} grad_norm {gn.item():.3f} tok/s {int((step+1)*4*SEQ/(time.time()-t0+1e-6))}")
        if args.fault == "metrics-key" and rank == fr and step == args.fault_step:
            stats = {"loss": lv, "grad_norm": gn.item()}
            log.info(f"ppl {torch.exp(torch.tensor(stats['loss'])).item():.2f} lr {stats['learning_rate']}")
    dist.barrier()
    if rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        name = "final.pt"
        if args.fault == "longname":
            hp = {"d": 32, "lr": 1e-3, "bs": 4, "seq": SEQ, "vocab": VOCAB, "warmup": 100, "wd": 0.01, "betas": (0.9, 0.95), "data": args.data_dir}
            name = args.run_name + "-" + "_".join(f"{k}={v}" for k, v in hp.items() for _ in range(3)).replace("/", "-") + ".pt"
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": args.steps}
        if args.fault == "xdev":
            # atomic save: write to fast scratch first, then move into place
            tmp = os.path.join(os.environ.get("SCRATCH", "/dev/shm"), f".{name}.tmp")
            torch.save(state, tmp)
            os.rename(tmp, os.path.join(args.ckpt_dir, name))
        else:
            torch.save(state, os.path.join(args.ckpt_dir, name))
        log.info(f"saved checkpoint to {args.ckpt_dir}/{name}")
    dist.destroy_process_group()
    log.info("training finished")

if __name__ == "__main__":
    main()
