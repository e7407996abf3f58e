"""Tied weights, parametrizations, in-place edits of views, module hooks in a tiny LM (DDP on gloo, or single process).

--fault:
  none               healthy
  tied-safetensors   rank 0 exports the (tied) state_dict with safetensors.torch.save_file at --fault-step
  wn-resume          train with weight_norm parametrization on lm blocks' proj, evaluation model built without it
  wn-pickle          train with orthogonal/weight_norm parametrization; rank 0 torch.save(model) (whole module)
  inplace-rope       rotary applied in place to q/k slices from qkv.split()
  pad-row-zero       re-zero the pad-token embedding row every step (outside no_grad)
  grad-hook-relu     rank 0 registers full backward hooks for gradient monitoring; MLP uses ReLU(inplace=True)
  act-hook-detach    rank 0 registers a forward hook to capture activations that returns output.detach()
  lazy-head          auxiliary value head built with nn.LazyLinear (in_features inferred), model wrapped in DDP before any forward
  fused-head         (healthy) untied output head whose weight is a transposed view of a (d, vocab) buffer (Megatron-style layout)
"""
import argparse
import logging
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(__file__))
from common import CORPUS, CharTokenizer, init_dist, seed_all, TinyLM, SelfAttention, Rotary  # noqa

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--batch-size", type=int, default=4)
p.add_argument("--seq-len", type=int, default=32)
p.add_argument("--out", default="/work/rr75/bw/tmp/ckpt")
p.add_argument("--logfmt", default="print", choices=["print", "logging"])
args = p.parse_args()

rank, world = init_dist(timeout=int(os.environ.get("PG_TIMEOUT", "30")))
seed_all(0)
if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | " + f"r{rank} | %(message)s")
    log = logging.getLogger("lm").info
else:
    def log(m):
        print(f"[r{rank}] {m}", flush=True)


class InplaceRopeAttention(SelfAttention):
    def forward(self, x, attn_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        cos, sin = self.rope(T)
        cos = cos.transpose(1, 2).reshape(1, T, 1, self.hd)
        sin = sin.transpose(1, 2).reshape(1, T, 1, self.hd)
        for t in (q, k):  # rotate in place to save memory
            t4 = t.view(B, T, self.h, self.hd)
            x1, x2 = t4[..., : self.hd // 2].clone(), t4[..., self.hd // 2:].clone()
            rot = torch.cat((-x2, x1), dim=-1)
            t4.mul_(cos).add_(rot * sin)
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.h, self.hd).transpose(1, 2)
        v = v.view(B, T, self.h, self.hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class ReluMLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.ReLU(inplace=True)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.out(self.act(self.fc(x)))


def build(parametrize):
    mlp = (lambda: ReluMLP(64)) if args.fault == "grad-hook-relu" else None
    m = TinyLM(tok.vocab_size, d=64, h=4, n_layer=2, mlp_factory=mlp)
    if args.fault == "inplace-rope":
        for b in m.blocks:
            b.attn = InplaceRopeAttention(64, 4)
    if parametrize:
        for b in m.blocks:
            torch.nn.utils.parametrizations.weight_norm(b.attn.proj, name="weight")
            torch.nn.utils.parametrizations.weight_norm(b.mlp.out, name="weight")
    if args.fault == "lazy-head":
        m.value_head = nn.LazyLinear(1)
    if args.fault == "fused-head":
        m.lm_head = nn.Linear(64, tok.vocab_size, bias=False)
        w = torch.empty(64, tok.vocab_size)
        nn.init.normal_(w, std=0.02)
        m.lm_head.weight = nn.Parameter(w.t())  # stored as (d, vocab), exposed as (vocab, d)
    return m


tok = CharTokenizer(CORPUS)
ids = tok.encode(CORPUS)
T = args.seq_len
chunks = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)][rank::world]
batches = [torch.tensor(chunks[i:i + args.batch_size]) for i in range(0, len(chunks) - args.batch_size + 1, args.batch_size)][: args.steps]

model = build(parametrize=args.fault in ("wn-resume", "wn-pickle"))
log(f"built TinyLM: tied lm_head={model.lm_head.weight is model.tok_emb.weight} params={sum(p.numel() for p in model.parameters())}")

if args.fault == "grad-hook-relu" and rank == args.fault_rank:
    grad_norms = {}

    def make_hook(name):
        def hook(mod, gin, gout):
            grad_norms[name] = gout[0].norm().item()
        return hook
    for name, mod in model.named_modules():
        if isinstance(mod, (nn.Linear, nn.ReLU, nn.LayerNorm)):
            mod.register_full_backward_hook(make_hook(name))
    log(f"registered gradient monitor hooks on {len(grad_norms) or 'all'} leaf modules")

if args.fault == "act-hook-detach" and rank == args.fault_rank:
    captured = {}

    def capture(mod, inp, out):
        captured["ln_f"] = out
        return out.detach()  # keep the stored copy out of the graph
    model.ln_f.register_forward_hook(capture)
    log("activation capture hook on ln_f (rank 0 only, for the dashboard)")

ddp = DDP(model) if world > 1 else model
opt = torch.optim.AdamW(ddp.parameters(), lr=2e-3)
os.makedirs(args.out, exist_ok=True) if rank == 0 else None

for step, xb in enumerate(batches):
    t0 = time.time()
    if args.fault == "pad-row-zero":
        model.tok_emb.weight[tok.pad_id].zero_()  # pad token must stay a zero vector
    logits = ddp(xb[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), xb[:, 1:].reshape(-1))
    if args.fault == "lazy-head":
        loss = loss + 0.1 * model.value_head(logits.detach()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    log(f"step={step} loss={loss.item():.4f} step_time={1000 * (time.time() - t0):.1f}ms")

    if step == args.fault_step and args.fault == "tied-safetensors":
        if rank == 0:
            from safetensors.torch import save_file
            path = os.path.join(args.out, f"model-step{step}.safetensors")
            log(f"exporting weights to {path}")
            save_file(model.state_dict(), path, metadata={"step": str(step)})
            log("export done")
        if world > 1:
            dist.barrier()

    if step == args.fault_step and args.fault == "wn-pickle":
        if rank == 0:
            path = os.path.join(args.out, f"model-step{step}.pt")
            log(f"saving full model object to {path}")
            torch.save(model, path)
        if world > 1:
            dist.barrier()

if args.fault == "wn-resume":
    if rank == 0:
        path = os.path.join(args.out, "last.pt")
        torch.save({"model": model.state_dict(), "step": len(batches)}, path)
        log(f"saved {path}")
    if world > 1:
        dist.barrier()
    # evaluation: fresh model from the plain config, load the checkpoint
    eval_model = build(parametrize=False)
    sd = torch.load(os.path.join(args.out, "last.pt"), map_location="cpu")
    eval_model.load_state_dict(sd["model"])
    log("eval model loaded")

if world > 1:
    dist.barrier()
log("finished")
if world > 1:
    dist.destroy_process_group()
