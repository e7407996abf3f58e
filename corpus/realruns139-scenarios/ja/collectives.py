"""Hand-written data-parallel loop (manual gradient all_reduce) where one rank diverges from the others' collectives."""
import argparse, os, sys, time, faulthandler, math
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--bad-rank", type=int, default=1)
    p.add_argument("--bad-step", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--pg-timeout", type=int, default=20)
    p.add_argument("--lock-dir", default="/work/rr139/ja/data/cache")
    return p.parse_args()

def main():
    a = get_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 1))
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(rank)
    if a.fault == "stale_lock":
        # build the tokenized cache; wait while another job holds the lock
        os.makedirs(a.lock_dir, exist_ok=True)
        lock = os.path.join(a.lock_dir, f"shard{rank}.lock")
        waited = 0
        while os.path.exists(lock):
            if waited % 5 == 0:
                print(f"rank{rank}: cache {lock} is locked by another process, waiting", flush=True)
            time.sleep(1); waited += 1
        print(f"rank{rank}: cache ready", flush=True)
        dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)
    for step in range(a.steps):
        x = torch.randn(16, 20, generator=g)
        y = x[:, :3].sum(1, keepdim=True)
        if a.fault in ("nan_skip", "nan_skip_synced") and rank == a.bad_rank and step == a.bad_step:
            x[0, 0] = float("inf")           # corrupt feature value in this rank's shard
        if a.fault == "inf_target" and rank == a.bad_rank and step == a.bad_step:
            y[0, 0] = float("inf")           # corrupt target value in this rank's shard
        if a.fault == "resample" and rank == a.bad_rank and step == a.bad_step:
            faulthandler.dump_traceback_later(12, exit=False)
            print(f"rank{rank}: resampling batch until it has >= 4 positive targets", flush=True)
            while (y > 3.5).sum() < 4 + 16:  # filter can never be satisfied (bug: +16)
                x = torch.randn(16, 20, generator=g); y = x[:, :3].sum(1, keepdim=True)
        loss = F.mse_loss(model(x), y)
        if a.fault in ("nan_skip_synced", "inf_target"):
            ok = torch.tensor([1.0 if math.isfinite(loss.item()) else 0.0])
            if ok.item() == 0.0:
                print(f"rank{rank}: WARNING step {step}: non-finite loss {loss.item()} on this rank", flush=True)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            if ok.item() == 0.0:
                print(f"rank{rank}: step {step}: a rank reported a non-finite loss, skipping this step on all ranks", flush=True)
                continue
        elif not math.isfinite(loss.item()):
            print(f"rank{rank}: step {step}: loss is {loss.item()}, skipping update", flush=True)
            continue
        opt.zero_grad(); loss.backward()
        if a.fault == "order" and rank == a.bad_rank and step == a.bad_step:
            # this rank logs its local metrics before syncing grads (others sync grads first)
            m = torch.tensor([loss.item(), 1.0]); dist.all_reduce(m)
        for p in model.parameters():
            dist.all_reduce(p.grad); p.grad /= world
        opt.step()
        m = torch.tensor([loss.item(), 1.0])
        if not (a.fault == "order" and rank == a.bad_rank and step == a.bad_step):
            dist.all_reduce(m)
        if rank == 0:
            print(f"step {step:3d} | mean loss {m[0].item()/m[1].item():.4f}", flush=True)
    print(f"rank{rank}: done", flush=True)
    dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
