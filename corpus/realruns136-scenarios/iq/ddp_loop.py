"""Tiny DDP training loop used for outside-stop / resource-limit scenarios.
Flags select the fault; nothing here raises a made-up exception."""
import argparse, os, sys, time, signal, logging, json
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-pad-mb", type=int, default=0, help="extra buffer saved with the checkpoint (e.g. EMA copy)")
p.add_argument("--ckpt-fileobj", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--share-strategy", default="")
p.add_argument("--sample-parts", type=int, default=1, help="tensors per sample (multi-view aug)")
p.add_argument("--sample-kb", type=int, default=1)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--shards-dir", default="")
p.add_argument("--eval-at", type=int, default=-1)
p.add_argument("--eval-rows", type=int, default=256)
p.add_argument("--eval-fallback", action="store_true", help="on allocation failure retry eval in chunks")
p.add_argument("--eval-numpy", action="store_true", help="build eval features with numpy")
p.add_argument("--async-ckpt", action="store_true", help="write checkpoints from a background thread")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--pid-dir", default="")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--graceful-term", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noise", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.use_logging:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg): print(f"[rank{rank}] {msg}", flush=True)

if args.pid_dir:
    os.makedirs(args.pid_dir, exist_ok=True)
    open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w").write(str(os.getpid()))

if args.share_strategy:
    torch.multiprocessing.set_sharing_strategy(args.share_strategy)

if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))

stop_requested = False
if args.graceful_term:
    def _h(sig, frm):
        global stop_requested
        log(f"received signal {signal.Signals(sig).name}; will save a checkpoint and exit after this step")
        stop_requested = True
    signal.signal(signal.SIGTERM, _h)

class Synth(Dataset):
    def __init__(self, n, shards=None):
        self.n = n; self.shards = shards; self.handles = {}
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        if self.shards:
            path = self.shards[i % len(self.shards)]
            # keep shard files open for fast random access (cache of handles)
            if path not in self.handles:
                self.handles[path] = open(path, "rb")
            f = self.handles[path]; f.seek(0); f.read(16)
        d = max(1, args.sample_kb * 256 // max(1, args.sample_parts))
        parts = [torch.randn(d, generator=g) for _ in range(args.sample_parts)]
        x = torch.cat([q[:8] if q.numel() >= 8 else torch.nn.functional.pad(q, (0, 8 - q.numel())) for q in parts[:4]] + [torch.zeros(32 - 8 * min(4, len(parts)))])
        y = x.sum().unsqueeze(0)
        if args.sample_parts > 1:
            return x, y, parts
        return x, y

shards = None
if args.shards_dir:
    shards = sorted(os.path.join(args.shards_dir, f) for f in os.listdir(args.shards_dir))
    log(f"found {len(shards)} shards in {args.shards_dir}")

ds = Synth(args.steps * args.batch * max(1, world), shards)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                persistent_workers=False)

model = nn.Sequential(nn.Linear(32, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1))
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
if args.noise:
    import warnings
    warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning)
    log("WARNING: no GPU found, falling back to CPU; training will be slow")

def save_ckpt(step):
    if rank != 0 or not args.ckpt_dir:
        return
    state = {"step": step, "model": model.state_dict(), "opt": opt.state_dict()}
    if args.ckpt_pad_mb:
        state["ema_shadow"] = torch.zeros(args.ckpt_pad_mb * 262144)
    path = os.path.join(args.ckpt_dir, f"ckpt_step{step:05d}.pt")
    log(f"saving checkpoint to {path}")
    if args.ckpt_fileobj:
        with open(path, "wb") as f:
            torch.save(state, f, _use_new_zipfile_serialization=False)
    else:
        torch.save(state, path)
    log(f"checkpoint saved ({os.path.getsize(path)/2**20:.1f} MiB)")

log(f"world_size={world} workers={args.workers} steps={args.steps} pid={os.getpid()}")
it = None
if args.progress and rank == 0:
    from tqdm import tqdm
    it = tqdm(total=args.steps * args.epochs, desc="train", dynamic_ncols=False, ncols=90)
step = 0
t0 = time.time()
for epoch in range(args.epochs):
    if sampler: sampler.set_epoch(epoch)
    for batch in dl:
        x, y = batch[0], batch[1]
        if step == args.eval_at:
            log(f"running eval on {args.eval_rows} rows")
            with torch.no_grad():
                try:
                    if args.eval_numpy:
                        import numpy as np
                        feats_np = np.random.default_rng(0).standard_normal((args.eval_rows, 4096))
                        log(f"eval feature mean {feats_np.mean():.4f}")
                    big = torch.randn(args.eval_rows, 32)
                    feats = torch.relu(big @ torch.randn(32, 4096))
                    log(f"eval feature mean {feats.mean().item():.4f}")
                except RuntimeError as e:
                    if not args.eval_fallback:
                        raise
                    log(f"WARNING: eval allocation failed ({e}); retrying in chunks of 1024 rows")
                    w = torch.randn(32, 4096); tot = 0.0
                    for c in range(0, args.eval_rows, 1024):
                        tot += torch.relu(torch.randn(min(1024, args.eval_rows - c), 32) @ w).sum().item()
                    log(f"eval feature mean {tot/(args.eval_rows*4096):.4f} (chunked)")
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        step += 1
        if it is not None:
            it.update(1); it.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 5 == 0:
            log(f"epoch {epoch} step {step}/{args.steps*args.epochs} loss {loss.item():.4f} {(time.time()-t0)/step:.2f}s/it")
        if args.ckpt_every and step % args.ckpt_every == 0:
            if args.async_ckpt:
                import threading
                th = threading.Thread(target=save_ckpt, args=(step,), name=f"ckpt-writer-{step}")
                th.start()
            else:
                save_ckpt(step)
        if stop_requested:
            save_ckpt(step); log("exiting after graceful stop"); sys.exit(0)
        time.sleep(args.step_sleep)
        if step >= args.steps * (epoch + 1):
            break
if it is not None: it.close()
log(f"training finished: {step} steps, final loss {loss.item():.4f}")
if world > 1:
    dist.barrier(); dist.destroy_process_group()
