"""Small DDP training job on gloo; flags select an OS/process-side fault, its rank and step."""
import argparse, ctypes, datetime, logging, os, signal, sys, time, warnings
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--ckpt-dir", default="/tmp/rr100fe_ckpt")
p.add_argument("--ckpt-every", type=int, default=10)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--tslog", action="store_true", help="use logging with timestamps")
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--resume", action="store_true")
p.add_argument("--save-fileobj", action="store_true", help="torch.save into an open Python file object")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.tslog:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
ddp = DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
start = 0
os.makedirs(args.ckpt_dir, exist_ok=True)
ck = os.path.join(args.ckpt_dir, "last.pt")
if args.resume and os.path.exists(ck):
    sd = torch.load(ck, map_location="cpu")
    model.load_state_dict(sd["model"]); opt.load_state_dict(sd["opt"]); start = sd["step"] + 1
    log(f"resumed from {ck} at step {start}")
log(f"world_size={world} params={sum(p.numel() for p in model.parameters())} restart_count={os.environ.get('TORCHELASTIC_RESTART_COUNT','-')}")
hog = []
g = torch.Generator().manual_seed(rank)
for step in range(start, args.steps):
    x = torch.randn(32, 64, generator=g); y = torch.randint(0, 10, (32,), generator=g)
    me = rank == args.fault_rank and step == args.fault_step
    if rank == args.fault_rank and step >= args.fault_step and args.fault == "memleak":
        # bug: keep every activation history "for analysis" -> grows ~200MB per step
        hog.append(torch.ones(50_000_000))
        rss = int(open("/proc/self/statm").read().split()[1]) * 4096 // 2**20
        log(f"step {step} debug cache size={len(hog)} rss={rss}MB")
    if me and args.fault == "bigalloc":
        # bug: builds a full pairwise-distance matrix for the 'hard negative' metric
        feats = torch.randn(60000, 64)
        dmat = torch.cdist(feats, feats)
    if me and args.fault == "segv":
        log("computing fast histogram via native helper")
        ctypes.string_at(0)  # native helper dereferences NULL
    if me and args.fault == "selfkill_first" and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        os.kill(os.getpid(), signal.SIGKILL)
    if me and args.fault == "hang":
        log(f"waiting for shard lock {args.ckpt_dir}/shard.lock")
        import fcntl
        fd = os.open(os.path.join(args.ckpt_dir, "shard.lock"), os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)  # lock is held by a stale process
    if me and args.fault == "monitored_hang":
        time.sleep(3600)
    if args.fault == "monitored_hang" and step == args.fault_step:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=15))
    if me and args.fault == "missing_file":
        stats = torch.load(os.path.join(args.ckpt_dir, f"norm_stats_rank{rank}.pt"))
    out = ddp(x); loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0:
        log(f"step {step}/{args.steps} loss={loss.item():.4f} lr=1.0e-03")
    if args.ckpt_every and step % args.ckpt_every == 0 and step > 0:
        if rank == 0 or args.fault == "ckpt_all_ranks":
            path = ck if args.fault != "ckpt_all_ranks" else os.path.join(args.ckpt_dir, f"rank{rank}_step{step}.pt")
            if args.fault == "atomic_rename":
                tmp = os.path.join("/tmp", f"ckpt_{step}.tmp")
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
                os.rename(tmp, path)
            elif args.save_fileobj:
                with open(path, "wb") as fh:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, fh)
            else:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            log(f"saved checkpoint {path}")
        dist.barrier()
    time.sleep(args.sleep)
log("training done")
dist.destroy_process_group()
