"""Tiny DDP/single-process trainer with lots of realistic noise; flags select the fault."""
import argparse, os, sys, time, json, math, logging, warnings, socket, traceback, sqlite3, signal
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, dest="frank")
p.add_argument("--step", type=int, default=6, dest="fstep")
p.add_argument("--noise", default="warn")   # comma list: warn,deprec,tracker,retry,nanskip,caught,ckpt,tqdm,bsfind
p.add_argument("--out", default="/tmp/rr84cu_out")
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--config", default="")
p.add_argument("--logfmt", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--onecycle-total", type=int, default=0)
args = p.parse_args()
noise = set(args.noise.split(","))

dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.logfmt:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("trainer")
torch.manual_seed(0)

cfg = {"lr": 0.05, "batch_size": 16}
if args.config:
    with open(args.config) as f:
        cfg.update(json.load(f))

class Net(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc1 = nn.Linear(16, h); self.fc2 = nn.Linear(h, 4)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

class DS(torch.utils.data.Dataset):
    def __init__(self, n=512, root=None):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 16, generator=g); self.y = torch.randint(0, 4, (n,), generator=g)
        self.root = root
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        if self.root is not None:
            arr = np.load(os.path.join(self.root, f"s{i % 64:03d}.npy"))
            return torch.from_numpy(arr).float(), self.y[i]
        return self.x[i], self.y[i]

# ---- optional tracker (offline) ----
if "tracker" in noise and rank == 0:
    try:
        s = socket.create_connection(("127.0.0.1", 37249), timeout=1)
    except OSError as e:
        log.error("tracker: could not reach experiment server at http://127.0.0.1:37249 (%s); falling back to offline mode, runs will be synced later", e)
        log.error("tracker: ERROR Communication error: [Errno 111] Connection refused. Retrying in offline mode.")

if "deprec" in noise:
    for i in range(3):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=1)
        warnings.warn(f"The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future (call {i}).", UserWarning)
    warnings.simplefilter("always", DeprecationWarning)
    import datetime as _dt
    for i in range(4):
        warnings.warn("datetime.datetime.utcnow() is deprecated and scheduled for removal in a future version. Use timezone-aware objects.", DeprecationWarning)

if "retry" in noise:
    # fetch vocab "from a mirror"; first attempts fail (nothing listens), then read the local cache
    for attempt in range(1, 4):
        try:
            port = 37248 if attempt < 3 else None
            if port:
                socket.create_connection(("127.0.0.1", port), timeout=1)
            log.info("mirror: fetched vocab (attempt %d) from local cache fallback", attempt)
            break
        except OSError:
            log.warning("mirror: attempt %d/3 failed, retrying in %.1fs", attempt, 0.2 * attempt)
            traceback.print_exc()
            time.sleep(0.2 * attempt)

data_root = None
if args.fault in ("corrupt-npy",):
    data_root = os.path.join(args.out, "npy")
    if rank == 0:
        os.makedirs(data_root, exist_ok=True)
        for i in range(64):
            np.save(os.path.join(data_root, f"s{i:03d}.npy"), np.random.randn(16).astype("float32"))
        with open(os.path.join(data_root, "s037.npy"), "r+b") as f:
            f.truncate(60)
    if dist_on: dist.barrier()

hidden = args.hidden
if args.fault == "ddp-mismatch" and rank == args.frank:
    hidden = hidden + 8   # stale config on one node
model = Net(hidden)
if args.resume:
    sd = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(sd["model"] if "model" in sd else sd)
    log.info("resumed from %s", args.resume)
if dist_on:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])

bs = cfg["batch_size"]
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg["lr"], total_steps=args.onecycle_total) if args.onecycle_total else None
if "bsfind" in noise:
    bs_try = 1 << 40
    while True:
        try:
            log.info("batch-size finder: trying activation buffer for batch_size=%d", bs_try)
            buf = torch.empty(bs_try, 16 * 64)
            del buf
            break
        except RuntimeError as e:
            log.warning("batch-size finder: batch_size=%d does not fit: %s", bs_try, str(e).splitlines()[0])
            traceback.print_exc()
            bs_try //= 64
    bs = min(bs, bs_try)
    log.info("batch-size finder: using batch_size=%d", bs)

ds = DS(root=data_root)
sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank) if dist_on else None
dl = torch.utils.data.DataLoader(ds, batch_size=bs, sampler=sampler, shuffle=sampler is None, num_workers=args.workers)

it = range(args.steps)
bar = None
if "tqdm" in noise and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=args.steps, desc="train", file=sys.stderr, mininterval=0, ascii=False)

db = None
if args.fault == "sqlite-lock":
    db = sqlite3.connect(os.path.join(args.out, "metrics.db"), timeout=0.5)
    if rank == 0:
        db.execute("CREATE TABLE IF NOT EXISTS m(step INT, rank INT, loss REAL)"); db.commit()
    if dist_on: dist.barrier()

skipped = 0
step = 0
data_iter = iter(dl)
while step < args.steps:
    try:
        x, y = next(data_iter)
    except StopIteration:
        data_iter = iter(dl); x, y = next(data_iter)
    if "nanskip" in noise and step in (3, 7) and rank == (world - 1):
        x = x.clone(); x[0, 0] = float("inf")
    if args.fault == "shape" and rank == args.frank and step == args.fstep:
        x = x[:, :15]  # feature-column drop from a bad preprocessing branch
    if args.fault == "collective" and rank == args.frank and step == args.fstep:
        t = torch.ones(3)
        dist.all_reduce(t)
    if args.fault == "flaky-once" and rank == args.frank and step == args.fstep and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        os.kill(os.getpid(), signal.SIGKILL)   # simulated node hiccup: worker killed on first attempt only
    if args.fault == "segv" and rank == args.frank and step == args.fstep:
        os.kill(os.getpid(), signal.SIGSEGV)
    if args.fault == "nofile" and step == args.fstep and rank == args.frank:
        handles = []
        for i in range(100000):
            handles.append(open(os.path.join(args.out, f"shard_{rank}_{i % 8}.idx"), "a"))
    if args.fault == "lr-blowup" and step == args.fstep:
        for g in opt.param_groups: g["lr"] = 1e6
    out = model(x)
    loss = F.cross_entropy(out, y)
    finite = torch.tensor([1.0 if torch.isfinite(loss) else 0.0])
    if dist_on:
        dist.all_reduce(finite, op=dist.ReduceOp.MIN)   # all ranks skip together
    if finite.item() == 0.0:
        skipped += 1
        log.warning("step %d: non-finite loss detected (local loss %s on rank %d), skipping optimizer step (%d skipped so far)", step, loss.item(), rank, skipped)
        if args.fault == "lr-blowup" and skipped >= 3:
            log.error("step %d: %d consecutive non-finite losses, aborting", step, skipped)
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")
        opt.zero_grad(set_to_none=True)
        step += 1
        if bar: bar.update(1)
        continue
    opt.zero_grad()
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    if "warn" in noise and step == 2:
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order.", UserWarning)
    if "caught" in noise and step == 4 and rank == 0:
        try:
            vals = {"acc": 0.5}
            f1 = vals["f1"] * 2
        except KeyError:
            log.exception("eval hook 'f1_logger' failed; continuing without it")
    if db is not None and step == args.fstep:
        if rank == 0:
            db.execute("BEGIN EXCLUSIVE"); db.execute("INSERT INTO m VALUES (?,?,?)", (step, rank, loss.item()))
            time.sleep(3); db.commit()
        else:
            time.sleep(0.5)
            db.execute("INSERT INTO m VALUES (?,?,?)", (step, rank, loss.item())); db.commit()
    if rank == 0 and step % 2 == 0:
        msg = f"step {step:4d} | loss {loss.item():.4f} | lr {opt.param_groups[0]['lr']:.3g} | bs {bs}"
        (bar.write(msg) if bar else log.info(msg))
    if "ckpt" in noise and rank == 0 and step % 4 == 3:
        path = os.path.join(args.out, "last.pt")
        if os.path.exists(path):
            log.warning("checkpoint %s already exists and will be overwritten", path)
        torch.save({"model": (model.module if dist_on else model).state_dict(), "step": step}, path)
    if args.fault == "save-weights-only" and rank == 0 and step == args.fstep:
        torch.save({"model": (model.module if dist_on else model).state_dict(), "args": args, "step": step}, os.path.join(args.out, "ep.pt"))
    if bar: bar.update(1)
    step += 1
    time.sleep(0.05)

if bar: bar.close()
if dist_on:
    dist.barrier()
if rank == 0:
    path = os.path.join(args.out, "final.pt")
    torch.save({"model": (model.module if dist_on else model).state_dict()}, path)
    log.info("training finished: %d steps, %d skipped, saved %s", args.steps, skipped, path)
if dist_on:
    dist.destroy_process_group()
