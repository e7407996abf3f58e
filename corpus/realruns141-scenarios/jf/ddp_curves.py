"""Multi-rank (gloo, CPU) training of a tiny transformer LM with DDP; loss curves printed in several styles.

--fault:
  none        healthy (noisy warnings)
  nan-data    the shard of --bad-rank contains a record whose log-scaled weight is log(0) -> inf loss on that rank
  diverge     warmup schedule misconfigured (peak lr 100x) -> loss climbs; divergence guard stops the run
  straggler   length-sorted contiguous sharding: --bad-rank gets the longest sequences, every step waits on it
  drift       hand-written gradient averaging that all-reduces a copy -> replicas drift; consistency check fails
--fmt: megatron | json | table
"""
import argparse, datetime, json, math, os, sys, time, warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=20)
p.add_argument("--iters", type=int, default=40)
p.add_argument("--fmt", default="megatron")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--lr-peak", type=float, default=1e-3)
args = p.parse_args()

torch.set_num_threads(1)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(1234)

V, D, T = 64, 48, 32


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(D, V)

    def forward(self, idx):
        Tn = idx.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(Tn)
        e = self.emb(idx)
        logits = self.out(self.enc(e, mask=mask, is_causal=True))
        if args.fault == "anomaly":
            # anti-collapse regulariser: keep token embeddings within a sequence spread out
            return logits, e.var(dim=1).sqrt().mean()
        return logits


# synthetic corpus: sequences with repeating patterns, variable length, per-sample weight
g = torch.Generator().manual_seed(7)
N = 2048
lengths = torch.randint(8, 129, (N,), generator=g)
corpus = []
for i in range(N):
    L = int(lengths[i])
    period = int(torch.randint(2, 6, (1,), generator=g))
    base = torch.randint(0, V, (period,), generator=g)
    seq = base.repeat(L // period + 1)[:L]
    noise = torch.rand(L, generator=g) < 0.05
    seq[noise] = torch.randint(0, V, (int(noise.sum()),), generator=g)
    count = float(torch.randint(1, 50, (1,), generator=g))
    corpus.append((seq, count))

if args.fault == "nan-data":
    # a record with a zero occurrence count lands in the bad rank's shard
    shard_len = N // world
    corpus[args.bad_rank * shard_len + args.at_step * 8 + 3] = (corpus[0][0], 0.0)

if args.fault == "anomaly":
    torch.autograd.set_detect_anomaly(True)
    # a padding-only record (all token 0) in the bad rank's shard
    shard_len = N // world
    corpus[args.bad_rank + world * (args.at_step * 8 + 2)] = (torch.zeros(40, dtype=torch.long), 1.0)

if args.fault == "straggler":
    # contiguous sharding of a length-sorted corpus
    order = sorted(range(N), key=lambda i: corpus[i][0].numel())
    corpus = [corpus[i] for i in order]
    shard = corpus[rank * (N // world):(rank + 1) * (N // world)]
    if rank != args.bad_rank:
        shard = [(s[: max(8, s.numel() // 4)], c) for s, c in shard]
    else:
        shard = [(s.repeat(6), c) for s, c in shard]
else:
    shard = corpus[rank::world] if args.fault != "nan-data" else corpus[rank * (N // world):(rank + 1) * (N // world)]


def get_batch(step, bs=8):
    items = [shard[(step * bs + j) % len(shard)] for j in range(bs)]
    L = max(s.numel() for s, _ in items)
    x = torch.zeros(bs, L, dtype=torch.long)
    for j, (s, _) in enumerate(items):
        x[j, : s.numel()] = s
    w = torch.log(torch.tensor([c for _, c in items])) if args.fault == "nan-data" else torch.ones(bs)
    return x, w


model = TinyLM()
if args.fault == "drift":
    net = model
else:
    net = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(net.parameters(), lr=args.lr_peak, weight_decay=0.01)
warm = 10
if args.fault == "diverge":
    # intended: peak 3e-4; a config override put 3e-2 and removed the decay
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
else:
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, args.iters) / args.iters)))

if args.fault == "none":
    warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of torch.nn.utils.parametrizations.weight_norm.")
    if rank == 0:
        print("WARNING: overriding default argument tokenizer_type:GPT2BPETokenizer with tokenizer_type:NullTokenizer", flush=True)

if rank == 0:
    n = sum(p.numel() for p in model.parameters())
    print(f"> number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n}", flush=True)
    print(f"> world size {world}, fault={args.fault}, fmt={args.fmt}", flush=True)
    if args.fmt == "table":
        print(f"{'step':>6} | {'loss':>10} | {'lr':>9} | " +  " | ".join(f"r{r} fwd ms" for r in range(world)) + " | " + " | ".join(f"r{r} bwd+sync ms" for r in range(world)) + " | step ms", flush=True)

best = float("inf")
t_start = time.time()
for step in range(1, args.iters + 1):
    t0 = time.time()
    x, w = get_batch(step)
    logits = net(x[:, :-1])
    reg = 0.0
    if args.fault == "anomaly":
        logits, reg = logits
    tok = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1), reduction="none").view(x.shape[0], -1)
    loss = (tok.mean(1) * w).sum() / w.sum() + 0.01 * reg
    t_fwd = time.time() - t0
    opt.zero_grad(set_to_none=True)
    loss.backward()
    t_comp = time.time() - t0
    if args.fault == "drift":
        for prm in model.parameters():
            if prm.grad is not None:
                gbuf = prm.grad.detach().clone()
                dist.all_reduce(gbuf)
                gbuf /= world  # averaged copy ... never written back to prm.grad
    opt.step()
    sched.step()
    # reduce the loss and timings for logging
    stats = torch.tensor([loss.item(), t_fwd * 1000.0, (t_comp - t_fwd) * 1000.0])
    gathered = [torch.zeros(3) for _ in range(world)]
    tw = time.time()
    dist.all_gather(gathered, stats)
    t_wait = (time.time() - tw) * 1000.0
    avg = sum(gg[0] for gg in gathered).item() / world
    lr = sched.get_last_lr()[0]
    step_ms = (time.time() - t0) * 1000.0

    if args.fmt == "json":
        print(json.dumps({"rank": rank, "step": step, "loss": round(loss.item(), 5), "avg_loss": round(avg, 5),
                          "lr": lr, "step_ms": round(step_ms, 1)}), flush=True)
    elif rank == 0 and args.fmt == "megatron":
        print(f" iteration {step:8d}/{args.iters:8d} | consumed samples: {step * 8 * world:10d} | elapsed time per iteration (ms): {step_ms:.1f} | "
              f"learning rate: {lr:.6E} | global batch size: {8 * world:5d} | lm loss: {avg:.6E} | loss scale: 1.0 | "
              f"number of skipped iterations:   0 | number of nan iterations: {int(not math.isfinite(avg)):3d} |", flush=True)
    elif rank == 0 and args.fmt == "table":
        print(f"{step:>6} | {avg:>10.4f} | {lr:>9.2e} | " +  " | ".join(f"{gg[1].item():>9.1f}" for gg in gathered) + " | "
              + " | ".join(f"{gg[2].item():>14.1f}" for gg in gathered) + f" | {step_ms:>7.1f}", flush=True)

    if not math.isfinite(avg):
        print(f"[rank{rank}] non-finite lm loss at iteration {step}: local loss {loss.item()} (reduced {avg}); "
              f"local sample weights {w.tolist()}", flush=True)
        dist.barrier()
        sys.exit(1)
    if args.fault == "diverge":
        best = min(best, avg)
        if step > warm and avg > 5 * best:
            if rank == 0:
                print(f"ERROR: loss diverged: lm loss {avg:.4f} at iteration {step} is more than 5x the best so far ({best:.4f}); "
                      f"stopping. lr={lr:.3e}", flush=True)
            sys.exit(2)
    if args.fault == "drift" and step % 10 == 0:
        chk = torch.tensor([sum(float(p.double().sum()) for p in model.parameters())], dtype=torch.float64)
        allchk = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(allchk, chk)
        vals = [a.item() for a in allchk]
        if rank == 0:
            print(f"[check] iteration {step}: parameter checksums per rank: " + ", ".join(f"{v:.6f}" for v in vals), flush=True)
        assert max(vals) - min(vals) < 1e-6, \
            f"Model parameters are not in sync across data-parallel ranks at iteration {step}: checksums {vals}"

if rank == 0:
    print(f"[after training is done] {args.iters} iterations in {time.time() - t_start:.1f}s; final lm loss {avg:.4f}", flush=True)
if args.fault == "straggler":
    mine = torch.tensor([t_comp])
    print(f"[rank{rank}] last step forward {t_fwd*1000:.1f} ms, backward+allreduce {(t_comp-t_fwd)*1000:.1f} ms, tokens/batch {x.numel()}", flush=True)
dist.destroy_process_group()
