"""Tiny DDP regression trainer with selectable log style and fault injection (realrun set 58 q)."""
import argparse, os, sys, time, json, math, logging, warnings, resource, signal
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--logfmt", default="plain", choices=["plain", "json", "jsonlib", "loguru", "rich", "tqdm", "print"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--ckpt-dir", default="/work/rr58/q/data/ckpt")
p.add_argument("--resume", default="")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--run-name", default="tiny")
p.add_argument("--config", default="")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

# ---------------- logging setup ----------------
class JsonFormatter(logging.Formatter):
    def format(self, r):
        d = {"ts": self.formatTime(r, "%Y-%m-%dT%H:%M:%S"), "level": r.levelname, "logger": r.name,
             "rank": rank, "msg": r.getMessage()}
        if r.exc_info:
            d["exc_info"] = self.formatException(r.exc_info)
        return json.dumps(d)

if args.logfmt == "loguru":
    from loguru import logger as log
    log.remove()
    log.add(sys.stderr, format="{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <8} | rank" + str(rank) + " | {name}:{function}:{line} - {message}", backtrace=True, diagnose=False)
    def info(m): log.info(m)
    def warn(m): log.warning(m)
    def exc(m): log.exception(m)
else:
    h = logging.StreamHandler(sys.stdout if args.logfmt != "rich" else sys.stderr)
    if args.logfmt == "json":
        h.setFormatter(JsonFormatter())
    elif args.logfmt == "jsonlib":
        from pythonjsonlogger import jsonlogger
        h.setFormatter(jsonlogger.JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s", rename_fields={"levelname": "level"}, static_fields={"rank": rank}))
    elif args.logfmt == "rich":
        from rich.logging import RichHandler
        from rich.traceback import install
        install(show_locals=False, width=110)
        h = RichHandler(rich_tracebacks=True, show_path=True)
    else:
        h.setFormatter(logging.Formatter(f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[h], force=True)
    L = logging.getLogger("train")
    def info(m): L.info(m)
    def warn(m): L.warning(m)
    def exc(m): L.exception(m)

def main():
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    info(f"starting run={args.run_name} world_size={world} fault={'<none>' if args.fault=='none' else 'configured'} torch={torch.__version__}")
    cfg = {"in_dim": 16, "hidden": args.hidden, "out_dim": 4, "batch": 32}
    if args.config:
        info(f"loading config {args.config}")
        with open(args.config) as f:
            cfg.update(json.load(f))
    if args.fault == "keyerror" and rank == args.fault_rank:
        cfg = {k: v for k, v in cfg.items() if k != "batch"} | {"batch_size": 32}   # renamed key in this rank's config
    model = nn.Sequential(nn.Linear(cfg["in_dim"], cfg["hidden"]), nn.ReLU(), nn.Linear(cfg["hidden"], cfg["out_dim"]))
    if args.fault == "unused":
        model.add_module("aux_head", nn.Linear(cfg["hidden"], 2))
        class M(nn.Module):
            def __init__(s, m): super().__init__(); s.m = m
            def forward(s, x):
                h = s.m[1](s.m[0](x))
                return s.m[2](h)  # aux_head never used
        model = M(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sched = None
    if args.fault == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.fault_step)
    start = 0
    if args.resume:
        info(f"resuming from {args.resume}")
        kw = {}
        if args.fault == "weightsonly":
            ck = torch.load(args.resume, map_location="cpu")
        else:
            ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        info(f"resumed at step {start}")
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    g = torch.Generator().manual_seed(1234 + rank)
    it = range(start, args.steps)
    if args.logfmt == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", ncols=90, mininterval=0)
    for step in it:
        x = torch.randn(cfg["batch"], cfg["in_dim"], generator=g)
        y = torch.randn(cfg["batch"], cfg["out_dim"], generator=g)
        if args.fault == "nanlr" and step >= args.fault_step:
            for pg in opt.param_groups: pg["lr"] = 1e18   # bad warmup schedule multiplies lr
        if args.fault == "rlimit" and rank == args.fault_rank and step == args.fault_step:
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            cur = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
            resource.setrlimit(resource.RLIMIT_AS, (cur + 64 * 2**20, hard))
            info("eval cache: allocating activation buffer for full validation set")
            buf = torch.empty(200_000_000, 16)  # ~12.8 GB
        if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
            import ctypes
            info("calling native metric helper")
            ctypes.string_at(0)
        if args.fault == "stall" and rank == args.fault_rank and step == args.fault_step:
            info("waiting for data shard lock /work/rr58/q/data/shard.lock")
            while os.path.exists("/nonexistent/shard.ready") is False:
                time.sleep(1)
        if args.fault == "mbarrier" and step == args.fault_step:
            if rank == args.fault_rank:
                info("refreshing data shard index from /work/rr58/q/data (slow NFS)")
                time.sleep(40)
            info("epoch boundary: syncing ranks")
            dist.monitored_barrier(timeout=timedelta(seconds=8), wait_all_ranks=True)
        if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
            x = torch.randn(cfg["batch"], cfg["in_dim"] + 3, generator=g)  # a shard with extra feature columns
        if args.fault == "sigkill" and rank == args.fault_rank and step == args.fault_step:
            open(f"/work/rr58/q/data/rank{rank}.pid", "w").write(str(os.getpid()))
            time.sleep(30)
        out = ddp(x)
        loss = nn.functional.mse_loss(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        if sched is not None: sched.step()
        lv = loss.item()
        if args.fault == "nanlr" and not math.isfinite(lv):
            raise FloatingPointError(f"Loss is {lv} at step {step}; stopping training")
        if world > 1:
            t = torch.tensor([lv]); dist.all_reduce(t); lv = t.item() / world
        if args.logfmt == "tqdm":
            it.set_postfix(loss=f"{lv:.4f}")
        elif rank == 0 or args.logfmt in ("json", "jsonlib", "loguru"):
            info(f"step={step} loss={lv:.4f} lr={opt.param_groups[0]['lr']:.4g}")
        if args.fault == "ckptsave" and rank == 0 and step == args.fault_step:
            name = f"{args.run_name}_step{step}.pt"
            path = os.path.join(args.ckpt_dir, name)
            os.makedirs(args.ckpt_dir, exist_ok=True)
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step + 1, "args": args}, path)
            info(f"saved checkpoint {path}")
        time.sleep(0.2)
    if rank == 0 and args.fault in ("none", "save"):
        os.makedirs(args.ckpt_dir, exist_ok=True)
        path = os.path.join(args.ckpt_dir, f"{args.run_name}.pt")
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": args.steps, "args": args}, path)
        info(f"saved checkpoint {path}")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    info("training finished")

if __name__ == "__main__":
    if args.logfmt in ("json", "jsonlib", "loguru") and args.fault not in ("segv", "rlimit"):
        try:
            main()
        except Exception:
            exc("training failed with an unhandled exception")
            raise SystemExit(1)
    else:
        main()
