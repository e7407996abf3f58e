"""Autograd misuse scenarios in a small LM-style trainer (single process or mp.spawn DDP over gloo)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--spawn", type=int, default=0, help="number of DDP ranks via mp.spawn (0 = single process)")
p.add_argument("--port", type=int, default=42620)
p.add_argument("--ckpt", default="off", choices=["off", "reentrant", "nonreentrant", "default"])
p.add_argument("--tqdm", action="store_true")
a = p.parse_args()

VOCAB, D, T = 97, 48, 12

class Block(nn.Module):
    def __init__(s, fault):
        super().__init__(); s.ln = nn.LayerNorm(D); s.fc1 = nn.Linear(D, 2 * D); s.fc2 = nn.Linear(2 * D, D)
        s.fault = fault; s.calls = 0
    def forward(s, x):
        s.calls += 1
        h = torch.sigmoid(s.fc1(s.ln(x)))
        if s.fault == "inplace" and s.active:
            h.mul_(s.mask)             # gating applied in place on the sigmoid output
        else:
            h = h * s.mask
        if s.fault == "ckpt_recompute" and s.calls > s.swish_after:
            # "enable gated activation after warmup", warmup counted in forward calls of this module
            h = h * torch.tanh(h)
        return x + s.fc2(h)

class LM(nn.Module):
    def __init__(s, fault, ckpt):
        super().__init__(); s.emb = nn.Embedding(VOCAB, D); s.blocks = nn.ModuleList([Block(fault) for _ in range(2)])
        s.out = nn.Linear(D, VOCAB); s.ckpt = ckpt
    def forward(s, idx, state=None):
        x = s.emb(idx)
        if state is not None:
            x = x + state
        for b in s.blocks:
            b.mask = (torch.rand(2 * D) > 0.1).float()
            if s.ckpt == "reentrant":
                x = checkpoint(b, x, use_reentrant=True)
            elif s.ckpt == "nonreentrant":
                x = checkpoint(b, x, use_reentrant=False)
            elif s.ckpt == "default":
                x = checkpoint(b, x)
            else:
                x = b(x)
        return s.out(x), x.mean(1, keepdim=True)

def run(rank, world):
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(a.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    torch.manual_seed(1234)
    model = LM(a.fault, a.ckpt)
    for b in model.blocks: b.active = False; b.swish_after = 2 * a.fault_step + 1
    if a.fault == "frozen_all_filter" or a.fault == "frozen_all_nofilter":
        # intended: freeze embeddings only; bug: pattern "" matches every parameter name
        freeze = os.environ.get("FREEZE_PATTERN", "")
        for n, p_ in model.named_parameters():
            if freeze in n:
                p_.requires_grad_(False)
        print(f"[rank{rank}] trainable params: {sum(p_.numel() for p_ in model.parameters() if p_.requires_grad)}", flush=True)
    if a.fault == "frozen_all_filter":
        opt = torch.optim.AdamW(filter(lambda t: t.requires_grad, model.parameters()), lr=3e-3)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    net = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        net = DDP(model)
    g = torch.Generator().manual_seed(rank)
    it = range(a.steps)
    if a.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", mininterval=0)
    state = None
    for step in it:
        idx = torch.randint(0, VOCAB, (8, T + 1), generator=g)
        faulty = rank == a.fault_rank and step >= a.fault_step
        for b in model.blocks: b.active = faulty
        if a.fault == "backward_twice" and faulty:
            logits, st = net(idx[:, :-1], state)  # carried state not detached after refactor
            state = st
        else:
            logits, st = net(idx[:, :-1], None if state is None else state.detach())
            state = st
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].reshape(-1))
        loss.backward()
        if a.fault == "leaf_inplace" and faulty:
            for p_ in model.parameters():
                p_.clamp_(-0.5, 0.5)     # weight clipping "constraint" added outside torch.no_grad()
        opt.step(); opt.zero_grad()
        msg = f"[rank{rank}] step {step} loss {loss.item():.4f}"
        if a.tqdm and rank == 0:
            it.write(msg)
        else:
            print(msg, flush=True)
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] training finished", flush=True)

if __name__ == "__main__":
    if a.spawn:
        mp.spawn(run, args=(a.spawn,), nprocs=a.spawn, join=True)
    else:
        run(0, 1)
