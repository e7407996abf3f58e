"""Tiny DDP trainer (gloo, CPU) with selectable real faults.

--fault: none | nan | shape | dtype | embed | unused | modelmismatch | segv | alloc |
         barrier | desync | fnf | fds | bn1 | ckptperm | slowwarn
"""
import argparse
import ctypes
import datetime
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--data-dir", default="data")
p.add_argument("--out-dir", default="out")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noisy", action="store_true")
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--no-ddp", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
torch.manual_seed(0)
torch.set_num_threads(1)

if args.style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
log(f"initialized process group: world_size={world} backend=gloo")

VOCAB = 100
D_IN = 16
hidden = 64
if args.fault == "modelmismatch" and rank == args.fault_rank:
    # per-host config override picked up a stale value
    hidden = int(os.environ.get("HIDDEN_OVERRIDE", "96"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 8)
        self.fc1 = nn.Linear(D_IN + 8, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, 4)
        self.aux = nn.Linear(hidden, 4)

    def forward(self, x, tok, use_aux=True):
        h = torch.cat([x, self.emb(tok)], dim=1)
        h = F.relu(self.bn(self.fc1(h)))
        out = self.fc2(h)
        if use_aux:
            out = out + 0.1 * self.aux(h)
        return out


def load_shard(r):
    path = os.path.join(args.data_dir, f"shard-{r:05d}.pt")
    if os.path.exists(path) or args.fault == "fnf":
        return torch.load(path)
    g = torch.Generator().manual_seed(100 + r)
    n = 8 * args.steps
    x = torch.randn(n, D_IN, generator=g)
    tok = torch.randint(0, VOCAB, (n,), generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return {"x": x, "tok": tok, "y": y}


data = load_shard(rank)
x_all, tok_all, y_all = data["x"], data["tok"], data["y"]
if rank == args.fault_rank:
    s = args.fault_step * 8
    if args.fault == "nan":
        x_all = x_all.clone(); x_all[s + 3, 5] = float("inf")  # bad record in this shard
    elif args.fault == "embed":
        tok_all = tok_all.clone(); tok_all[s + 1] = VOCAB + 27  # tokenizer with bigger vocab
    elif args.fault == "dtype":
        x_all = x_all.double()  # shard written from numpy float64
    elif args.fault == "bn1":
        x_all = x_all[: s + 1]; tok_all = tok_all[: s + 1]; y_all = y_all[: s + 1]

model = Net()
if args.no_ddp:
    for prm in model.parameters():
        dist.broadcast(prm.data, 0)
    ddp = model
else:
    ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.noisy)
opt = torch.optim.SGD(ddp.parameters(), lr=0.5 if args.fault == "nan" else 0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
if args.noisy:
    sched.step()  # stepped before optimizer.step(): torch warns

it = range(args.steps)
if args.style == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, file=sys.stderr)

open_files = []
t0 = time.time()
for step in it:
    s = step * 8
    xb, tb, yb = x_all[s:s + 8], tok_all[s:s + 8], y_all[s:s + 8]
    if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
        # this part of the shard was featurised with the new extractor (17 features)
        xb = torch.cat([xb, torch.zeros(len(xb), 1)], dim=1)
    if args.fault == "fds" and rank == args.fault_rank:
        # cache readers opened per step and never closed
        for k in range(40):
            open_files.append(open(os.path.join(args.data_dir, "index.txt")))
    use_aux = True
    if args.fault == "unused" and rank == args.fault_rank and step >= args.fault_step:
        use_aux = False  # aux head disabled after warmup on this rank only
    if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
        # fast-path reader reads through a stale pointer
        ctypes.string_at(0x7ff000000000, 16)
    if args.fault == "alloc" and rank == args.fault_rank and step == args.fault_step:
        n_classes = int(yb.max().item()) * 10**6 + 1  # label remap bug
        confusion = torch.zeros(n_classes, n_classes)
    if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step:
        import faulthandler
        print(f"[rank{rank}] watchdog armed: dumping stacks if step {step} takes > 12s", flush=True)
        faulthandler.dump_traceback_later(12, exit=False)
        marker = os.path.join(args.out_dir, "eval_cache.ready")
        while not os.path.exists(marker):  # waits for a cache that rank 0 was supposed to build
            time.sleep(0.5)
    out = ddp(xb, tb, use_aux)
    loss = F.cross_entropy(out, yb)
    opt.zero_grad()
    loss.backward()
    if args.no_ddp:
        params = list(model.parameters())
        if args.fault == "desync" and rank == args.fault_rank and step == args.fault_step:
            params = params[1:]  # skip frozen embedding on this rank
        for prm in params:
            dist.all_reduce(prm.grad)
            prm.grad /= world
    opt.step()
    if not args.noisy or step > 0:
        sched.step()
    if args.fault == "barrier" and step == args.fault_step:
        if rank == args.fault_rank:
            time.sleep(args.pg_timeout + 20)  # slow eval only on this rank
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
    if args.fault == "ckptperm" and step == args.fault_step and rank == args.fault_rank:
        os.makedirs(args.out_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.out_dir, f"step{step}.pt"))
    if step % 2 == 0 or step == args.steps - 1:
        msg = f"step {step}/{args.steps} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.4f}"
        if args.style == "tqdm" and rank == 0:
            it.set_postfix(loss=f"{loss.item():.4f}")
        else:
            log(msg)
    if args.noisy and rank == 0 and step == 3:
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
        log(f"grad_norm {gn:.3f} clipped to 0.001")
    time.sleep(args.sleep)

log(f"training done in {time.time() - t0:.1f}s")
dist.barrier()
if rank == 0:
    os.makedirs(args.out_dir, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final.pt"))
    log(f"saved {args.out_dir}/final.pt")
dist.destroy_process_group()
