"""Distributed evaluation of a small classifier: each rank scores its shard, predictions are gathered.
--fault: none | uneven_gather | slow_rank | empty_shard | sigkill_wait
--launch: env (torchrun) | spawn (torch.multiprocessing.spawn)"""
import argparse, os, sys, time, warnings
from datetime import timedelta
import numpy as np, torch, torch.distributed as dist, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

def build_data(n=203, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g); y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)

def run(rank, world, a):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.pg_timeout))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    ddp = nn.parallel.DistributedDataParallel(model)
    ds = build_data()
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    dl = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds, shuffle=True, seed=1))
    for ep in range(2):
        dl.sampler.set_epoch(ep)
        for i, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(ddp(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank{rank}] epoch {ep} train_loss={loss.item():.4f}", flush=True)
    # ---- evaluation ----
    model.eval()
    if a.fault == "ddp_quant":
        # serve the int8 model for eval; keep the DDP wrapper so the eval loop code stays the same
        qmodel = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        model = nn.parallel.DistributedDataParallel(qmodel)
    eval_ds = build_data(n=97, seed=5)
    idx = list(range(rank, len(eval_ds), world))  # strided shard, no padding -> uneven
    if a.fault == "empty_shard" and rank == a.fault_rank:
        # filtering by a "min length" that no sample on this shard passes
        idx = [i for i in idx if eval_ds[i][0].abs().max() > 100]
    preds, labels = [], []
    with torch.no_grad():
        for i in range(0, len(idx), 8):
            xb = torch.stack([eval_ds[j][0] for j in idx[i:i + 8]]); yb = torch.stack([eval_ds[j][1] for j in idx[i:i + 8]])
            preds.append(model(xb).argmax(-1)); labels.append(yb)
            if a.fault == "slow_rank" and rank == a.fault_rank:
                time.sleep(4)   # this rank's eval shard goes through a slow path
            if a.fault == "sigkill_wait" and rank == a.fault_rank:
                open(f"/tmp/rr72bm_pid_{rank}", "w").write(str(os.getpid())); time.sleep(3)
    p = torch.cat(preds) if preds else torch.empty(0, dtype=torch.long)
    l = torch.cat(labels) if labels else torch.empty(0, dtype=torch.long)
    acc_local = (p == l).float().mean().item() if a.fault != "empty_shard" else float((p == l).sum()) / len(p)
    print(f"[rank{rank}] local eval: n={len(p)} acc={acc_local:.4f}", flush=True)
    if a.fault == "slow_rank":
        dist.monitored_barrier(timeout=timedelta(seconds=6))
    if a.fault == "uneven_gather":
        # gather raw prediction tensors (sizes differ: 97 samples over ranks)
        out = [torch.empty_like(p) for _ in range(world)]
        dist.all_gather(out, p)
    else:
        n = torch.tensor([len(p)]); sizes = [torch.zeros(1, dtype=torch.long) for _ in range(world)]
        dist.all_gather(sizes, n); m = int(max(s.item() for s in sizes))
        pad = torch.full((m,), -1, dtype=torch.long); pad[:len(p)] = p
        out = [torch.empty(m, dtype=torch.long) for _ in range(world)]
        dist.all_gather(out, pad)
    allp = torch.cat(out); allp = allp[allp >= 0]
    if rank == 0:
        print(f"[rank0] gathered {allp.numel()} predictions, class balance={np.bincount(allp.numpy(), minlength=2).tolist()}", flush=True)
    dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="none"); ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--launch", default="env"); ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--port", default="32950"); ap.add_argument("--pg-timeout", type=int, default=30)
    a = ap.parse_args()
    if a.launch == "spawn":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", a.port)
        torch.multiprocessing.spawn(run, args=(a.nprocs, a), nprocs=a.nprocs)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a)
