"""Two-stage model split across 2 ranks; activations/grads exchanged with send/recv or batch_isend_irecv."""
import argparse, os, sys, time, resource
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "hidden-mismatch", "memcap", "seq-mismatch"])
p.add_argument("--p2p", default="sendrecv", choices=["sendrecv", "batched"])
p.add_argument("--at-step", type=int, default=5)
p.add_argument("--steps", type=int, default=15)
p.add_argument("--hidden", type=int, default=128)
p.add_argument("--mb", type=int, default=4)
a = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank()
assert dist.get_world_size() == 2, "this pipeline has exactly two stages"
torch.manual_seed(rank)
H, B, S = a.hidden, 8, 16
stage_hidden = H
if a.fault == "hidden-mismatch" and rank == 1:
    stage_hidden = H * 2 // 3 * 1 + 0  # stage-1 config built from a different yaml (hidden 85 vs 128)
if rank == 0:
    stage = nn.Sequential(nn.Embedding(1000, H), nn.Linear(H, H), nn.Tanh())
else:
    stage = nn.Sequential(nn.Linear(stage_hidden, stage_hidden), nn.Tanh(), nn.Linear(stage_hidden, 1000))
opt = torch.optim.Adam(stage.parameters(), lr=1e-3)
print(f"stage {rank}: {sum(p.numel() for p in stage.parameters())} params, hidden={stage_hidden}", flush=True)

def p2p(op, t, peer):
    if a.p2p == "batched":
        reqs = dist.batch_isend_irecv([dist.P2POp(op, t, peer)])
        for r in reqs: r.wait()
    else:
        (dist.send if op is dist.isend else dist.recv)(t, peer)

for step in range(a.steps):
    t0 = time.time()
    seq = S
    if a.fault == "seq-mismatch" and step >= a.at_step:
        seq = S + 8 if rank == 0 else S   # longer samples from a new data shard on stage 0 only
    if a.fault == "memcap" and rank == 1 and step == a.at_step:
        # the stage-1 node is shared; its container memory limit is lowered
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))
    losses = []
    for m in range(a.mb):
        if rank == 0:
            tok = torch.randint(0, 1000, (B, seq))
            act = stage(tok)
            p2p(dist.isend, act.detach().contiguous(), 1)
            grad = torch.empty_like(act)
            p2p(dist.irecv, grad, 1)
            act.backward(grad)
        else:
            act = torch.empty(B, seq, stage_hidden, requires_grad=False)
            p2p(dist.irecv, act, 0)
            act.requires_grad_(True)
            logits = stage(act)
            if a.fault == "memcap" and step == a.at_step:
                # per-token loss with full vocabulary softmax kept for logging
                big = logits.unsqueeze(2).expand(B, seq, 8192, 1000).contiguous()
            tgt = torch.randint(0, 1000, (B, seq))
            loss = nn.functional.cross_entropy(logits.reshape(-1, 1000), tgt.reshape(-1)) / a.mb
            loss.backward()
            p2p(dist.isend, act.grad.contiguous(), 0)
            losses.append(loss.item())
    opt.step(); opt.zero_grad()
    if rank == 1:
        print(f"step {step} loss {sum(losses):.4f} ({(time.time()-t0)*1000:.0f} ms)", flush=True)
dist.barrier()
print(f"stage {rank} done", flush=True)
dist.destroy_process_group()
