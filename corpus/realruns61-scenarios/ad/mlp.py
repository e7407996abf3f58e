"""MLP regression on synthetic data. --mode selects a healthy-with-warnings variant or a fault."""
import argparse, os, sys, warnings, torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader
sys.path.insert(0, os.path.dirname(__file__)); from common import setup, avg, teardown
p = argparse.ArgumentParser()
p.add_argument("--mode", default="plain"); p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0); p.add_argument("--spawn", type=int, default=0)
p.add_argument("--tqdm", action="store_true")
a = p.parse_args()
def main(rank_arg=None):
    if rank_arg is not None:
        os.environ.update(RANK=str(rank_arg), WORLD_SIZE=str(a.spawn), MASTER_ADDR="127.0.0.1", MASTER_PORT="30360")
    rank, ws = setup()
    torch.manual_seed(0)
    X = torch.randn(256, 12); w = torch.randn(12, 1); Y = X @ w + 0.1 * torch.randn(256, 1)
    if a.mode == "target_broadcast": Y = Y.squeeze(1)     # target shape (B,) vs prediction (B,1)
    dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, num_workers=a.workers)
    if a.mode == "sparse_adam":
        model = nn.ModuleDict({"emb": nn.EmbeddingBag(50, 8, sparse=True), "lin": nn.Linear(12 + 8, 1)})
    else:
        model = nn.Sequential(nn.Linear(12, 64), nn.GELU(), nn.Linear(64, 1))
    if a.mode == "fp16_scaler": model = model.half()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    total = a.epochs * len(dl)
    if a.mode == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=len(dl))  # per-epoch total used by mistake
    else:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    amp_dev = "cuda" if a.mode == "cuda_autocast" else "cpu"
    scaler = torch.amp.GradScaler(amp_dev, enabled=a.mode in ("cuda_autocast", "fp16_scaler"))
    step = 0
    for ep in range(a.epochs):
        it = dl
        if a.tqdm:
            from tqdm import tqdm; it = tqdm(dl, desc=f"epoch {ep}", file=sys.stdout, mininterval=0)
        if a.mode == "sched_order" and ep == 0: sched.step()   # scheduler stepped at epoch start
        for x, y in it:
            if a.mode == "fp16_scaler": x, y = x.half(), y.half()
            with torch.autocast(amp_dev, dtype=torch.bfloat16, enabled=a.mode == "cuda_autocast"):
                if a.mode == "sparse_adam":
                    ids = (x[:, :4].abs() * 10).long().clamp(max=49)
                    pred = model["lin"](torch.cat([x, model["emb"](ids)], 1))
                else:
                    pred = model(x)
                loss = F.mse_loss(pred, y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt); scaler.update()
            if a.mode != "sched_order" or ep > 0 or step > 0: sched.step()
            step += 1
        l = avg(loss.item(), ws)
        print(f"[rank{rank}] epoch {ep} step {step} mse {l:.4f} lr {sched.get_last_lr()[0]:.5f}", flush=True)
    print(f"[rank{rank}] finished {step} steps", flush=True)
    teardown()
if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp; mp.spawn(main, nprocs=a.spawn)
    else:
        main()
