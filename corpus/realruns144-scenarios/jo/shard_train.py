"""Small DDP training job over per-rank data shards (gloo, CPU).

Faults are induced through the data on disk, the environment, or the code path a flag selects:
  --fault none|unused|attr|nanguard|oomeval|ckpt-save|ckpt-rename|ckpt-longname
Data faults are made by `prep_shards.py` (bad width, missing file, truncated file, ...).
"""
import argparse, os, sys, time, math, json, warnings, logging, datetime, signal

import numpy as np
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="data/shards")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--style", default="print", choices=["print", "logging", "tqdm", "loguru"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--hang-dump", type=float, default=0.0)
p.add_argument("--run-name", default="shardnet")
args = p.parse_args()

rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))))
world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))))
os.environ.setdefault("RANK", str(rank)); os.environ.setdefault("WORLD_SIZE", str(world))
torch.manual_seed(0)
torch.set_num_threads(1)

# ---------------- logging -----------------
if args.style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    _log = logging.getLogger("shardnet.train")
    def log(msg): _log.info(msg)
    def warn(msg): _log.warning(msg)
elif args.style == "loguru":
    from loguru import logger
    logger.remove()
    logger.add(sys.stderr, colorize=True,
               format="<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | <level>{level: <8}</level> | "
                      "<cyan>rank" + str(rank) + "</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - <level>{message}</level>")
    def log(msg): logger.info(msg)
    def warn(msg): logger.warning(msg)
else:
    def log(msg): print(f"[rank{rank}] {msg}", flush=True)
    def warn(msg): print(f"[rank{rank}] WARNING {msg}", flush=True)

if args.hang_dump:
    import faulthandler
    def _announce(*a):
        pass
    print(f"[rank{rank}] faulthandler armed: stack dump after {args.hang_dump:.0f}s (pid {os.getpid()})", flush=True)
    faulthandler.dump_traceback_later(args.hang_dump, exit=False)

os.makedirs("pids", exist_ok=True)
with open(f"pids/rank{rank}.pid", "w") as f:
    f.write(str(os.getpid()))

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
log(f"init_process_group done: backend=gloo world_size={world} pid={os.getpid()}")

LABELS = {"neg": 0, "neu": 1, "pos": 2, "mix": 3}


class ShardDataset(Dataset):
    def __init__(self, root, r):
        meta = json.load(open(os.path.join(root, f"shard-{r:05d}.json")))
        self.x = np.load(os.path.join(root, meta["features"]))
        self.tok = np.load(os.path.join(root, meta["tokens"]), allow_pickle=True)
        self.lab = meta["labels"]
        self.vocab = meta["vocab"]

    def __len__(self):
        return len(self.lab)

    def __getitem__(self, i):
        x = torch.from_numpy(np.asarray(self.x[i], dtype=np.float32))
        t = torch.as_tensor(np.asarray(self.tok[i], dtype=np.int64))
        y = LABELS[self.lab[i]]
        return x, t, y


class ShardNet(nn.Module):
    def __init__(self, d_in=32, vocab=128, hidden=64, n_cls=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.proj = nn.Linear(d_in, hidden)
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(2 * hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_cls)
        self.aux_head = nn.Linear(hidden, 1)

    def forward(self, x, t, use_aux=True):
        h = torch.cat([self.proj(x), self.emb(t).mean(1)], dim=-1)
        h = self.body(h)
        out = self.head(h)
        aux = self.aux_head(h).squeeze(-1) if use_aux else None
        return out, aux


ds = ShardDataset(args.data_dir, rank)
log(f"loaded shard {rank}: {len(ds)} samples from {args.data_dir}")
dl = DataLoader(ds, batch_size=args.bs, shuffle=False, num_workers=args.workers, drop_last=True)
model = ShardNet(vocab=ds.vocab, hidden=args.hidden)
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
start_step = 0
if args.resume:
    path = args.resume.format(rank=rank)
    log(f"resuming from {path}")
    sd = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(sd["model"])
    opt.load_state_dict(sd["optim"])
    start_step = int(sd["step"])
ddp = DDP(model, find_unused_parameters=args.find_unused)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
lossf = nn.CrossEntropyLoss()

if args.style == "tqdm" and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=args.steps, initial=start_step, desc="train", dynamic_ncols=False, ncols=100)
else:
    bar = None


def save_ckpt(step):
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step}
    if args.fault == "ckpt-longname":
        hp = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items()) if k not in ("fault",))
        name = f"{args.run_name}_{hp}_{hp}_step{step}.pt".replace("/", "-")
    else:
        name = f"{args.run_name}_step{step:06d}.pt"
    final = os.path.join(args.ckpt_dir, name)
    if args.fault == "ckpt-rename":
        # write to fast local scratch first, then move into place atomically
        tmp = os.path.join("/dev/shm", f".{name}.tmp-{os.getpid()}")
        with open(tmp, "wb") as f:
            torch.save(state, f)
        try:
            os.rename(tmp, final)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    else:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        with open(final, "wb") as f:
            torch.save(state, f)
    log(f"saved checkpoint {final}")


step = start_step
it = iter(dl)
t0 = time.time()
while step < args.steps:
    try:
        x, t, y = next(it)
    except StopIteration:
        it = iter(dl)
        x, t, y = next(it)
    use_aux = True
    if args.fault == "unused" and rank == args.fault_rank and step >= args.fault_step:
        # this shard has no regression targets after the warm-up section
        use_aux = False
    out, aux = ddp(x, t, use_aux=use_aux)
    loss = lossf(out, y)
    if aux is not None:
        loss = loss + 0.1 * aux.pow(2).mean()
    if args.fault == "nanguard" and not torch.isfinite(loss):
        raise FloatingPointError(f"rank {rank}: non-finite loss {loss.item()} at step {step}")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    step += 1
    if args.step_sleep:
        time.sleep(args.step_sleep)
    if step % 5 == 0 or step == 1:
        lt = torch.tensor([loss.item()])
        dist.all_reduce(lt)
        avg = lt.item() / world
        msg = f"step {step}/{args.steps} loss {loss.item():.4f} avg_loss {avg:.4f} lr {sched.get_last_lr()[0]:.5f}"
        if args.fault == "attr" and rank == args.fault_rank and step >= args.fault_step:
            wn = ddp.head.weight.norm().item()
            msg += f" head_wnorm {wn:.3f}"
        if bar is not None:
            bar.set_postfix(loss=f"{avg:.4f}")
        else:
            log(msg)
    if bar is not None:
        bar.update(1)
    if args.fault == "oomeval" and rank == args.fault_rank and step == args.fault_step:
        log("running retrieval eval: pairwise similarity over the eval pool")
        n_pool = 200_000
        with torch.no_grad():
            emb = torch.randn(n_pool, 8)
            sim = emb @ emb.T
            log(f"recall@1 {sim.argmax(1).eq(torch.arange(n_pool)).float().mean():.3f}")
    if args.ckpt_every and step % args.ckpt_every == 0 and rank == 0:
        save_ckpt(step)
    if args.ckpt_every and step % args.ckpt_every == 0:
        dist.barrier()

if bar is not None:
    bar.close()
log(f"training finished: {step} steps in {time.time() - t0:.1f}s")
dist.barrier()
dist.destroy_process_group()
