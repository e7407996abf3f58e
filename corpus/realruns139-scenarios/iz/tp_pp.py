"""Tensor-parallel (parallelize_module) and pipeline-parallel (torch.distributed.pipelining) toy LM on CPU/gloo."""
import argparse, logging, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

p = argparse.ArgumentParser()
p.add_argument("--mode", default="tp")
p.add_argument("--tp-size", type=int, default=2)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--microbatches", type=int, default=4)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--stage1-in", type=int, default=0)
p.add_argument("--schedule", default="gpipe")
p.add_argument("--eval-every", type=int, default=0)
a = p.parse_args()
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank{rank} %(levelname)s %(message)s")
log = logging.getLogger("tp_pp")
dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
V = 256

class Attn(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.h = h; s.hd = d // h
        s.q = nn.Linear(d, d); s.k = nn.Linear(d, d); s.v = nn.Linear(d, d); s.o = nn.Linear(d, d)
    def forward(s, x):
        B, T, _ = x.shape
        # local number of heads = heads // tp (Megatron-style), inferred from the local projection width
        q = s.q(x).view(B, T, -1, s.hd).transpose(1, 2)
        k = s.k(x).view(B, T, -1, s.hd).transpose(1, 2)
        v = s.v(x).view(B, T, -1, s.hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.o(y.transpose(1, 2).reshape(B, T, -1))

class Block(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.ln1 = nn.LayerNorm(d); s.attn = Attn(d, h); s.ln2 = nn.LayerNorm(d)
        s.fc = nn.Linear(d, 4 * d); s.proj = nn.Linear(4 * d, d)
    def forward(s, x):
        x = x + s.attn(s.ln1(x))
        return x + s.proj(F.gelu(s.fc(s.ln2(x))))

torch.manual_seed(0)
tokens = torch.randint(0, V, (64, 17), generator=torch.Generator().manual_seed(0))

if a.mode == "tp":
    from torch.distributed.tensor.parallel import parallelize_module, ColwiseParallel, RowwiseParallel
    dp = world // a.tp_size
    mesh = init_device_mesh("cpu", (dp, a.tp_size), mesh_dim_names=("dp", "tp"))
    tp_mesh = mesh["tp"]
    emb = nn.Embedding(V, a.dim); blocks = nn.Sequential(*[Block(a.dim, a.heads) for _ in range(2)]); head = nn.Linear(a.dim, V)
    for b in blocks:
        parallelize_module(b, tp_mesh, {"attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
                                        "attn.o": RowwiseParallel(), "fc": ColwiseParallel(), "proj": RowwiseParallel()})
    params = list(emb.parameters()) + list(blocks.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    log.info("TP mesh %s, local q out_features=%s", mesh, blocks[0].attn.q.weight.to_local().shape[0])
    for step in range(a.steps):
        x = tokens[step * 4:(step + 1) * 4]
        logits = head(blocks(emb(x[:, :-1])))
        loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
        loss.backward(); opt.step(); opt.zero_grad()
        if rank == 0: log.info("step %d loss %.4f", step, loss.item())
elif a.mode == "pp":
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe, Schedule1F1B
    class Stage0(nn.Module):
        def __init__(s):
            super().__init__(); s.emb = nn.Embedding(V, a.dim); s.b = Block(a.dim, a.heads)
        def forward(s, x): return s.b(s.emb(x))
    class Stage1(nn.Module):
        def __init__(s, din):
            super().__init__(); s.adapt = nn.Linear(din, a.dim) if din != a.dim else nn.Identity()
            s.b = Block(a.dim, a.heads); s.head = nn.Linear(a.dim, V)
        def forward(s, h): return s.head(s.b(s.adapt(h)))
    mod = Stage0() if rank == 0 else Stage1(a.stage1_in or a.dim)
    stage = PipelineStage(mod, rank, world, torch.device("cpu"))
    def loss_fn(logits, tgt): return F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
    S = Schedule1F1B if a.schedule == '1f1b' else ScheduleGPipe
    sched = S(stage, n_microbatches=a.microbatches, loss_fn=loss_fn)
    log.info('pipeline %s, %d stages, %d microbatches', S.__name__, world, a.microbatches)
    opt = torch.optim.AdamW(mod.parameters(), lr=1e-3)
    for step in range(a.steps):
        x = tokens[(step * a.batch) % 48:(step * a.batch) % 48 + a.batch]
        if rank == 0:
            sched.step(x[:, :-1])
        else:
            losses = []
            sched.step(target=x[:, 1:], losses=losses)
            log.info("step %d loss %.4f (%d microbatches)", step, torch.stack(losses).mean().item(), len(losses))
        opt.step(); opt.zero_grad()
        if a.eval_every and (step + 1) % a.eval_every == 0:
            # quick validation pass through the same schedule (no targets: just look at the logits)
            with torch.no_grad():
                out = sched.step(tokens[48:56, :-1]) if rank == 0 else sched.step()
            if rank == world - 1: log.info("eval logits %s", tuple(out.shape))
log.info("finished")
dist.destroy_process_group()
