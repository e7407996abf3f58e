"""DDP classifier trainer with a per-epoch validation loop.

--fault selects a bug in the validation / metrics code:
  none            healthy
  eval_rank0_only validation (with an all_reduce of the metric) runs only on --fault-rank
  gather_uneven   validation set sharded by hand (data[rank::world]); predictions all_gathered
  empty_val       validation split computed as int(frac * n) -> 0 samples
  logits_buffer   preallocates a [n_val, seq, vocab] float buffer for eval logits
  kill_in_eval    --fault-rank sleeps inside eval (so an operator can kill it)
  pred_dump       writes every eval batch's predictions to its own file and never closes it
"""
import argparse, os, sys, time, math, json
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler, random_split

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--n-train", type=int, default=512)
p.add_argument("--n-val", type=int, default=101)
p.add_argument("--val-frac", type=float, default=0.1)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--eval-bs", type=int, default=16)
p.add_argument("--vocab", type=int, default=32000)
p.add_argument("--seq", type=int, default=512)
p.add_argument("--out", default="/tmp/bc_out")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--manual-allreduce", action="store_true", help="average grads with dist.all_reduce instead of DDP")
args = p.parse_args()


def log(msg):
    print(f"[rank{rank}] {msg}", flush=True)


distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

torch.manual_seed(0)
D, C = 32, 10
X = torch.randn(args.n_train + args.n_val, D)
W = torch.randn(D, C)
Y = (X @ W).argmax(1)
full = TensorDataset(X, Y)

if args.fault == "empty_val":
    n_val = int(args.val_frac * len(full))
    train_ds, val_ds = random_split(full, [len(full) - n_val, n_val], generator=torch.Generator().manual_seed(0))
else:
    train_ds = TensorDataset(X[: args.n_train], Y[: args.n_train])
    val_ds = TensorDataset(X[args.n_train:], Y[args.n_train:])

model = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, C))
if distributed and not args.manual_allreduce:
    model = nn.parallel.DistributedDataParallel(model)
elif distributed:
    for prm in model.parameters():
        dist.broadcast(prm.data, 0)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
lossf = nn.CrossEntropyLoss()

train_sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
train_dl = DataLoader(train_ds, batch_size=args.bs, sampler=train_sampler, shuffle=train_sampler is None)

if args.fault == "gather_uneven":
    idx = list(range(rank, len(val_ds), world))  # hand-rolled sharding, no padding
    val_dl = DataLoader(torch.utils.data.Subset(val_ds, idx), batch_size=args.eval_bs)
elif args.fault == "empty_val":
    val_dl = DataLoader(val_ds, batch_size=args.eval_bs, shuffle=True)
else:
    vs = DistributedSampler(val_ds, num_replicas=world, rank=rank, shuffle=False) if distributed else None
    val_dl = DataLoader(val_ds, batch_size=args.eval_bs, sampler=vs)

open_handles = []


def evaluate(epoch):
    model.eval()
    correct = torch.zeros(1)
    total = torch.zeros(1)
    preds_all, labels_all = [], []
    if args.fault == "logits_buffer":
        # keep full-vocab logits for every validation sequence for later perplexity/calibration analysis
        log(f"allocating eval logits buffer {len(val_ds)}x{args.seq}x{args.vocab}")
        buf = torch.empty(len(val_ds), args.seq, args.vocab)
        buf.zero_()
    with torch.no_grad():
        for i, (x, y) in enumerate(val_dl):
            if args.fault == "kill_in_eval" and rank == args.fault_rank and epoch == 1:
                log(f"eval batch {i}: running slow metric (pid {os.getpid()})")
                time.sleep(120)
            out = model(x)
            pred = out.argmax(1)
            correct += (pred == y).sum()
            total += y.numel()
            if args.fault == "gather_uneven":
                gp = [torch.empty_like(pred) for _ in range(world)]
                dist.all_gather(gp, pred)
                gy = [torch.empty_like(y) for _ in range(world)]
                dist.all_gather(gy, y)
                preds_all.append(torch.cat(gp)); labels_all.append(torch.cat(gy))
            if args.fault == "pred_dump":
                os.makedirs(args.out, exist_ok=True)
                f = open(os.path.join(args.out, f"pred_e{epoch}_r{rank}_b{i}.txt"), "w")
                f.write(" ".join(map(str, pred.tolist())))
                f.flush()
                open_handles.append(f)
    if distributed:
        dist.all_reduce(correct)
        dist.all_reduce(total)
    acc = (correct / total).item()
    model.train()
    return acc


for epoch in range(args.epochs):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    t0 = time.time()
    running = 0.0
    for step, (x, y) in enumerate(train_dl):
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        if distributed and args.manual_allreduce:
            for prm in model.parameters():
                dist.all_reduce(prm.grad)
                prm.grad /= world
        opt.step()
        running += loss.item()
        if step % 8 == 0:
            log(f"epoch {epoch} step {step}/{len(train_dl)} loss {loss.item():.4f}")
    log(f"epoch {epoch} train_loss {running / max(1, len(train_dl)):.4f} time {time.time() - t0:.2f}s")
    if args.fault == "eval_rank0_only":
        if rank == args.fault_rank:
            acc = evaluate(epoch)
            log(f"epoch {epoch} val_acc {acc:.4f}")
    else:
        acc = evaluate(epoch)
        if rank == 0:
            log(f"epoch {epoch} val_acc {acc:.4f}")

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log("training finished")
