"""Tiny training loops exercising less common numeric failure paths. --fault selects one."""
import argparse, os, sys, math, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=10)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--temperature", type=float, default=0.8)
p.add_argument("--dtype", default="float32")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)
g = torch.Generator().manual_seed(100 + rank)
dtype = getattr(torch, args.dtype)


class Attn(nn.Module):
    def __init__(self, vocab=64, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, sparse=(args.fault == "sparse_adam"))
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids, pad_mask=None):
        h = self.emb(ids)
        q, k, v = self.qkv(h).chunk(3, -1)
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        causal = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).triu(1)
        s = s.masked_fill(causal, -1e9)
        return self.out(F.softmax(s, -1) @ v)


model = Attn().to(dtype)
if dist_on:
    model = nn.parallel.DistributedDataParallel(model)
base = model.module if dist_on else model
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
sched = None
if args.fault == "onecycle":
    # total_steps computed from the epoch length of ONE shard, but the loop runs over the full epoch
    steps_per_epoch = 24 // 2
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, epochs=1, steps_per_epoch=steps_per_epoch)


def whitening_loss(z):
    # decorrelation loss on a batch of embeddings (Cholesky whitening)
    zc = z - z.mean(0, keepdim=True)
    cov = zc.T @ zc / (z.shape[0] - 1)
    Lc = torch.linalg.cholesky(cov)
    w = torch.linalg.solve_triangular(Lc, zc.T, upper=False).T
    return (w.pow(2).mean() - 1).abs()


for step in range(args.steps):
    bs = 16
    ids = torch.randint(0, 64, (bs, 12), generator=g)
    if args.fault == "bf16_tied_head":
        # encoder under CPU autocast (bf16); output head tied to the embedding, computed after the autocast block
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = base.qkv(base.emb(ids))[..., :32]
        logits = h @ base.emb.weight.T if step >= args.step else (h.float() @ base.emb.weight.T)
    else:
        logits = model(ids)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, 64).float(), ids[:, 1:].reshape(-1))
    if args.fault == "proto_half":
        # prototype (metric-learning) auxiliary loss on the pooled embeddings
        emb = base.emb(ids).mean(1)
        if step == 0:
            proto_bank = emb[:8].detach().half()      # prototype bank kept in fp16 to save memory
        d = torch.cdist(emb.to(proto_bank.dtype), proto_bank)
        loss = loss + 0.05 * d.min(1).values.mean()
    if args.fault == "cholesky":
        z = base.emb(ids[:, 0]).float()[:, :24]
        if step == args.step and rank == args.rank:
            # small last batch on this rank: fewer samples than embedding dims
            z = z[:6]
        loss = loss + 0.1 * whitening_loss(z)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if sched is not None:
        sched.step()
    lr = opt.param_groups[0]["lr"]
    print(f"[rank {rank}/{world}] it {step:3d} loss={loss.item():.4f} lr={lr:.3e}", flush=True)
    if args.fault in ("multinomial",) and rank == args.rank and step > 0 and step % args.step == 0:
        # periodic sample from the model for qualitative monitoring
        with torch.no_grad():
            ctx = torch.randint(0, 64, (1, 4), generator=g)
            for _ in range(8):
                lg = model(ctx)[:, -1, :].float() / args.temperature
                probs = F.softmax(lg, -1)
                nxt = torch.multinomial(probs, 1)
                ctx = torch.cat([ctx, nxt], 1)
        print(f"[rank {rank}] sample @ step {step}: {ctx.tolist()[0]}", flush=True)
print(f"[rank {rank}] finished {args.steps} iterations", flush=True)
if dist_on:
    dist.destroy_process_group()
