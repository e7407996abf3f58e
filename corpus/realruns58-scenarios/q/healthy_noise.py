"""Healthy tiny trainings that print alarming-looking but harmless output (realrun set 58 q)."""
import argparse, os, sys, json, time, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True, choices=["optional-import", "nan-skip", "spawn-warn", "eval-callback"])
p.add_argument("--world", type=int, default=2)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--port", type=int, default=29920)
args = p.parse_args()

def build():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

def train_loop(rank, world, log, ddp_kwargs=None, skip_nonfinite=False, inject_inf_step=-1, warn_sched=False):
    model = build()
    ddp = nn.parallel.DistributedDataParallel(model, **(ddp_kwargs or {})) if world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, 4)
    if warn_sched:
        sched.step()   # stepped before the first optimizer.step(): torch warns
    g = torch.Generator().manual_seed(rank)
    skipped = 0
    for step in range(args.steps):
        x = torch.randn(32, 16, generator=g); y = torch.randn(32, 4, generator=g)
        if step == inject_inf_step:
            x[0, 0] = float("inf")   # a raw sample with an overflowed feature value
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if skip_nonfinite and not torch.isfinite(gn):
            skipped += 1
            log.warning(f"step={step} non-finite grad_norm={gn.item()} loss={loss.item()} -> skipping optimizer step (skipped={skipped})")
            continue
        opt.step(); sched.step()
        lv = loss.detach()
        if world > 1:
            dist.all_reduce(lv); lv = lv / world
        log.info(f"step={step} loss={lv.item():.4f} grad_norm={gn.item():.3f} lr={sched.get_last_lr()[0]:.2e}")
        time.sleep(0.1)
    return model

def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s", force=True)
    log = logging.getLogger("spawn")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    scaler = torch.amp.GradScaler("cuda")  # config written for GPU nodes
    train_loop(rank, world, log, ddp_kwargs={"find_unused_parameters": True}, warn_sched=True)
    dist.barrier(); dist.destroy_process_group()
    log.info("done")

def main():
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if args.mode == "spawn-warn":
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)
        print("all workers joined, exit 0")
        return
    if args.mode == "optional-import":
        from loguru import logger as log
        log.remove(); log.add(sys.stderr, format="{time:HH:mm:ss.SSS} | {level: <8} | r" + str(rank) + " | {message}")
    else:
        class J(logging.Formatter):
            def format(self, r):
                d = {"time": self.formatTime(r), "level": r.levelname, "rank": rank, "message": r.getMessage()}
                if r.exc_info: d["exception"] = self.formatException(r.exc_info)
                return json.dumps(d)
        h = logging.StreamHandler(sys.stdout); h.setFormatter(J())
        if args.mode == "eval-callback":
            from rich.logging import RichHandler
            h = RichHandler(rich_tracebacks=True)
        logging.basicConfig(level=logging.INFO, handlers=[h], force=True)
        log = logging.getLogger("trainer")
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    if args.mode == "optional-import":
        try:
            import tensorboard_plugin_profile_tiny  # optional profiler plugin
        except ImportError:
            log.exception("optional profiler plugin unavailable; falling back to CSV metrics")
        model = train_loop(rank, world, log)
    elif args.mode == "nan-skip":
        model = train_loop(rank, world, log, skip_nonfinite=True, inject_inf_step=3)
    elif args.mode == "eval-callback":
        model = train_loop(rank, world, log)
        try:
            preds = torch.zeros(0); tgt = torch.zeros(0)
            f1 = (2 * preds.sum() / (preds.numel() + tgt.numel())).item()
            per_class = [f1 / 0 if False else None for _ in range(0)]
            worst = max(per_class)   # no rare-class samples in this shard
        except ValueError:
            log.exception("eval callback 'rare_class_f1' failed; metric omitted for this epoch")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info("training finished; metrics written")

if __name__ == "__main__":
    main()
