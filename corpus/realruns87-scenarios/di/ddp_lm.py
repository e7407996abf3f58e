"""Tiny char-level transformer LM trained with DDP (gloo, CPU).

Data: per-rank shards DATA/rank{r}/shard{k:03d}.npy (int64 [n, seq+1]); a rank opens
shard k only when it reaches step k*steps_per_shard, so a bad shard surfaces late.
Flags select code paths that contain the bugs studied (see --fault).
"""
import argparse, os, sys, time, math, json, logging, shutil
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--data-dir", required=True)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--steps-per-shard", type=int, default=10)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--vocab", type=int, default=64)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--log-style", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--pid-dir", default="")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=25)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--tmp-dir", default="")
p.add_argument("--per-rank-optim", action="store_true")
p.add_argument("--metrics-file", default="")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
local_rank = int(os.environ.get("LOCAL_RANK", 0))
torch.set_num_threads(1)
torch.manual_seed(1234)

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")


def info(msg):
    if args.log_style == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


if args.pid_dir:
    os.makedirs(args.pid_dir, exist_ok=True)
    with open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
info(f"initialized process group: world_size={world} backend={dist.get_backend()}")

# ---------------------------------------------------------------- data

def shard_path(r, k):
    return os.path.join(args.data_dir, f"rank{r}", f"shard{k:03d}.npy")


def load_shard(k):
    path = shard_path(rank, k)
    arr = np.load(path)
    return torch.from_numpy(arr.astype(np.int64))


vocab = args.vocab
if args.fault == "vocab-from-data":
    # bug: vocabulary size derived from the rank-local shard instead of a shared vocab file
    first = load_shard(0)
    vocab = int(first.max().item()) + 1
    info(f"vocab size inferred from local data: {vocab}")

# ---------------------------------------------------------------- model

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.aux_head = nn.Linear(d, 1)  # auxiliary "length" regression head

    def forward(self, idx, with_aux=True):
        T = idx.shape[1]
        pos = torch.arange(T)
        x = self.tok(idx) + self.pos(pos)
        mask = torch.triu(torch.full((T, T), float("-inf")), 1)
        for b in self.blocks:
            x = b(x, mask)
        x = self.ln(x)
        logits = self.head(x)
        aux = self.aux_head(x.mean(1)).squeeze(-1) if with_aux else None
        return logits, aux


model = TinyLM(vocab, args.dim, args.seq)
ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
info(f"model params: {sum(p.numel() for p in model.parameters())}")

start_step = 0
if args.resume:
    # every rank restores the shared model and its own optimizer shard
    sd = torch.load(os.path.join(args.resume, "model.pt"), map_location="cpu")
    model.load_state_dict(sd["model"])
    osd = torch.load(os.path.join(args.resume, f"optim_rank{rank}.pt"), map_location="cpu")
    opt.load_state_dict(osd)
    start_step = sd["step"]
    info(f"resumed from {args.resume} at step {start_step}")

if args.anomaly:
    torch.autograd.set_detect_anomaly(True)

# ---------------------------------------------------------------- helpers

def evaluate(step):
    """rank-0 evaluation on the held-out shard."""
    model.eval()
    with torch.no_grad():
        data = torch.from_numpy(np.load(os.path.join(args.data_dir, "eval.npy")).astype(np.int64))
        if args.fault == "eval-shape" and step >= args.fault_step:
            # bug introduced with the "predict next token only" refactor: inputs/targets misaligned
            inp, tgt = data[:, :-1], data[:, 2:]
        else:
            inp, tgt = data[:, :-1], data[:, 1:]
        logits, _ = model(inp, with_aux=False)
        acc = (logits.argmax(-1) == tgt).float().mean().item()
        ppl = math.exp(F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1)).item())
    model.train()
    return acc, ppl


def save_checkpoint(step):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    if rank == 0:
        name = f"step{step:05d}.pt"
        if args.fault == "ckpt-name":
            # name checkpoints after the full run config so they are self-describing
            name = "ckpt_" + "_".join(f"{k}={v}" for k, v in sorted(vars(args).items())) + f"_step{step}.pt"
            name = name.replace("/", "-")
        if args.tmp_dir:
            tmp = os.path.join(args.tmp_dir, name + ".tmp")
            torch.save({"model": model.state_dict(), "step": step}, tmp)
            os.rename(tmp, os.path.join(args.ckpt_dir, name))  # atomic publish
        else:
            torch.save({"model": model.state_dict(), "step": step,
                        "opt": opt.state_dict()}, os.path.join(args.ckpt_dir, name))
        info(f"saved checkpoint {name}")
    if args.per_rank_optim:
        torch.save(opt.state_dict(), os.path.join(args.ckpt_dir, f"optim_rank{rank}.pt"))
    if args.monitored_barrier:
        dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
    else:
        dist.barrier()


# ---------------------------------------------------------------- train loop

bar = None
if args.log_style == "tqdm" and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=args.steps, initial=start_step, desc="train", dynamic_ncols=False, ncols=100)

shard_k, shard, pos = -1, None, 0
open_shards = []
t0 = time.time()
for step in range(start_step, args.steps):
    k = step // args.steps_per_shard
    if k != shard_k:
        if args.fault == "fifo-shard" and rank == args.fault_rank and k > 0:
            # shard streamed from a pipe written by the prefetch daemon
            with open(shard_path(rank, k) + ".pipe", "rb") as f:
                shard = torch.from_numpy(np.load(f).astype(np.int64))
        elif args.fault == "fd-leak" and rank == args.fault_rank:
            # keeps every shard file open so the memmap can be re-read later
            fh = open(shard_path(rank, k), "rb")
            open_shards.append(fh)
            for j in range(k + 1):
                open_shards.append(open(shard_path(rank, j), "rb"))
            shard = load_shard(k)
        else:
            shard = load_shard(k)
        shard_k, pos = k, 0
        if args.log_style != "tqdm":
            info(f"step {step}: opened shard {k} ({shard.shape[0]} sequences)")
    if pos + args.batch > shard.shape[0]:
        pos = 0
    batch = shard[pos:pos + args.batch]
    pos += args.batch
    inp, tgt = batch[:, :-1], batch[:, 1:]

    if args.fault == "alloc-buffer" and rank == args.fault_rank and step == args.fault_step:
        # per-rank token histogram for logging; bug: outer product instead of bincount
        counts = torch.zeros(inp.numel() * 4096, inp.numel() * 64, dtype=torch.float32)
        info(f"token histogram buffer {tuple(counts.shape)}")

    with_aux = True
    if args.fault == "skip-aux" and rank == args.fault_rank and step >= args.fault_step:
        # sequences in late shards of this rank carry no length label -> aux loss skipped
        with_aux = False
    logits, aux = ddp(inp, with_aux=with_aux)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
    if with_aux:
        aux_tgt = (inp != 0).float().sum(1) / args.seq
        if args.fault == "nan-weight":
            # loss weight normalised by the number of padded positions in the batch
            npad = (inp == 0).float().sum()
            loss = loss + 0.1 * F.mse_loss(aux, aux_tgt) * (npad / npad)
        else:
            loss = loss + 0.1 * F.mse_loss(aux, aux_tgt)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step()
    sched.step()

    if args.fault == "rank0-metric-allreduce" and rank == args.fault_rank and step == args.fault_step:
        # average the loss over ranks for the log line (only done where we log)
        t = loss.detach().clone()
        dist.all_reduce(t)
        info(f"step {step}: mean loss over ranks {t.item() / world:.4f}")

    if args.fault == "gather-preds" and step == args.fault_step:
        # gather number-of-correct per sequence from every rank for the accuracy table
        correct = (logits.argmax(-1) == tgt).sum(-1)
        local = correct[: args.batch - rank]  # last partial batch differs per rank
        out = [torch.zeros_like(local) for _ in range(world)]
        dist.all_gather(out, local)
        info(f"gathered {sum(o.numel() for o in out)} accuracy entries")

    if (step + 1) % args.log_every == 0:
        msg = f"step {step + 1}/{args.steps} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e}"
        if bar is not None:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        elif args.log_style == "logging" or rank == 0 or args.fault in ("nan-weight",):
            info(msg)
    if args.metrics_file and rank == 0:
        mf = globals().get("_mf") or open(args.metrics_file, "a")
        globals()["_mf"] = mf
        mf.write(json.dumps({"step": step + 1, "loss": loss.item(), "grad_norm": gn.item(),
                             "lr": sched.get_last_lr()[0], "time": time.time() - t0,
                             "tokens": (step + 1) * args.batch * args.seq * world}) + "\n")
        mf.flush()
    if bar is not None:
        bar.update(1)
    if args.eval_every and (step + 1) % args.eval_every == 0:
        if rank == 0:
            acc, ppl = evaluate(step + 1)
            info(f"eval step {step + 1}: acc {acc:.4f} ppl {ppl:.2f}")
    if args.ckpt_every and (step + 1) % args.ckpt_every == 0:
        save_checkpoint(step + 1)
    if args.step_sleep:
        time.sleep(args.step_sleep)

if bar is not None:
    bar.close()
info(f"training finished in {time.time() - t0:.1f}s")
dist.destroy_process_group()
