"""Real training failures outside the usual classes. --fault selects, --rank/--step place it."""
import argparse, os, sys, time, logging, json
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", required=True)
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=8)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--spawn", type=int, default=0, help="use mp.spawn with this many procs")
p.add_argument("--port", type=int, default=30170)
a = p.parse_args()

def worker(rank, world):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
    log = logging.getLogger("train")
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    if a.fault == "sparse-adam":
        emb = nn.EmbeddingBag(100, 16, mode="mean", sparse=(rank == a.rank or a.rank < 0))
        model = nn.Sequential(emb, nn.Linear(16, 4))
    else:
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    if a.fault == "ddp-frozen":
        for prm in model.parameters(): prm.requires_grad_(False)  # "freeze backbone" applied to the whole model
    if a.fault == "interop-threads":
        torch.set_num_threads(1)
    if world > 1:
        ddp = DDP(model)
    else:
        ddp = model
    if a.fault == "zero-consolidate":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    else:
        opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    sched = None
    if a.fault == "onecycle":
        # total_steps computed from the per-rank dataset length, but rank-dependent shard sizes
        n_batches = 10 if rank != a.rank else 10
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=n_batches)
    for step in range(a.steps):
        g = torch.Generator().manual_seed(step * 10 + rank)
        if a.fault == "sparse-adam":
            x = torch.randint(0, 100, (8, 5), generator=g)
        else:
            x = torch.randn(8, 16, generator=g)
        y = torch.randint(0, 4, (8,), generator=g)
        if a.fault == "interop-threads" and step == a.step and rank == a.rank:
            log.info("rank %d: switching to eval-friendly threading for the validation phase", rank)
            torch.set_num_interop_threads(2)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if sched: sched.step()
        if step % 4 == 0:
            log.info("step %d loss %.4f lr %.2e", step, loss.item(), opt.param_groups[0]["lr"])
        if a.fault == "zero-consolidate" and step == a.step:
            if rank == 0:
                log.info("saving checkpoint at step %d", step)
                torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, "/work/rr55/n/tmp/zero.pt")
            dist.barrier()
        if a.fault == "filename-too-long" and step == a.step and rank == a.rank:
            cfg = {"model": "mlp", "hidden": [32] * 40, "lr": 1e-3, "optimizer": "adam", "betas": [0.9, 0.999], "tags": ["ablation-%02d" % i for i in range(12)]}
            name = "ckpt_" + "_".join(f"{k}={v}" for k, v in cfg.items()).replace(" ", "").replace("/", "-") + f"_step{step}.pt"
            os.makedirs("/work/rr55/n/tmp/ck", exist_ok=True)
            log.info("saving checkpoint to %s", "/work/rr55/n/tmp/ck/" + name[:60] + "...")
            torch.save(model.state_dict(), os.path.join("/work/rr55/n/tmp/ck", name))
        if a.fault == "thread-pool" and step == a.step and rank == a.rank:
            from concurrent.futures import ThreadPoolExecutor
            log.info("rank %d: starting async checkpoint uploader pool (16 threads)", rank)
            ex = ThreadPoolExecutor(max_workers=16)
            futs = [ex.submit(time.sleep, 0.5) for _ in range(16)]
            [f.result() for f in futs]
        if a.fault == "sqlite-locked" and step == a.step:
            import sqlite3
            db = sqlite3.connect("/work/rr55/n/tmp/metrics.db", timeout=0.05)
            db.execute("CREATE TABLE IF NOT EXISTS m (rank INT, step INT, loss REAL)")
            db.execute("BEGIN EXCLUSIVE")
            db.execute("INSERT INTO m VALUES (?,?,?)", (rank, step, loss.item()))
            time.sleep(1.0)  # per-rank metrics flush holds the write lock
            db.commit()
            log.info("rank %d flushed metrics to sqlite", rank)
        if a.fault == "avg-gloo" and step == a.step:
            m = torch.tensor([loss.item()])
            dist.all_reduce(m, op=dist.ReduceOp.AVG)  # average the logged loss across ranks
            log.info("step %d mean loss %.4f", step, m.item())
        if a.fault == "pickle-lambda" and step == a.step and rank == a.rank:
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=lambda s: min(1.0, (s + 1) / 5))
            log.info("saving full training state (model, optimizer, scheduler object) at step %d", step)
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "sched": sched, "step": step}, "/work/rr55/n/tmp/full_state.pt")
        if world > 1 and step % 5 == 4:
            dist.barrier()
    log.info("rank %d done", rank)
    if world > 1:
        dist.destroy_process_group()

if __name__ == "__main__":
    if a.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(a.port)
        mp.spawn(worker, args=(a.spawn,), nprocs=a.spawn)
    elif "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        worker(0, 1)
