"""Validation loop + sklearn metric computation for a small multi-class classifier.

--fault: none | logits_to_f1 | grad_auc | rank_short
Runs single-process, under torchrun, or with --spawn N (torch.multiprocessing.spawn).
"""
import argparse, os, sys, time, warnings
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.distributed as dist
import torch.multiprocessing as mp
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support, roc_auc_score, classification_report


def run(rank, world, args):
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    torch.manual_seed(rank)
    model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 4))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(1024, 20, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 1.5).long()  # class 3 is rare
    xs, ys = x[rank::world], y[rank::world]
    for ep in range(3):
        for i in range(0, len(xs), 64):
            loss = nn.functional.cross_entropy(model(xs[i:i + 64]), ys[i:i + 64])
            opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0:
            print(f"epoch {ep} train_loss={loss.item():.4f}", flush=True)

    vx = torch.randn(200, 20, generator=g)
    vy = (vx[:, 0] > 0).long() + 2 * (vx[:, 1] > 1.5).long()
    vx, vy = vx[rank::world], vy[rank::world]
    if args.fault == "grad_auc":
        logits = model(vx)  # validation forward outside torch.no_grad()
    else:
        with torch.no_grad():
            logits = model(vx)
    probs = torch.softmax(logits, -1)
    if args.fault == "logits_to_f1":
        preds = logits.numpy()  # forgot argmax
    elif args.fault == "none":
        preds = torch.zeros_like(vy).numpy() if False else logits.argmax(-1).numpy()
        preds[preds == 3] = 0  # model never predicts the rare class after thresholding
    else:
        preds = logits.argmax(-1).numpy()
    acc = accuracy_score(vy.numpy(), preds)
    f1 = f1_score(vy.numpy(), preds, average="macro")
    p, r, f, s = precision_recall_fscore_support(vy.numpy(), preds, labels=[0, 1, 2, 3], zero_division="warn")
    auc = roc_auc_score(np.eye(4)[vy.numpy()][:, :3], probs[:, :3], average="macro")
    print(f"[rank {rank}] val acc={acc:.4f} macro_f1={f1:.4f} auc={auc:.4f} per-class P={np.round(p, 3)}", flush=True)
    if rank == 0:
        print(classification_report(vy.numpy(), preds, labels=[0, 1, 2, 3], zero_division=0), flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", default="44531")
    args = p.parse_args()
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", args.port)
        mp.spawn(run, args=(args.spawn, args), nprocs=args.spawn)
    elif "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
        run(dist.get_rank(), dist.get_world_size(), args)
    else:
        run(0, 1, args)


if __name__ == "__main__":
    main()
