# Tiny decoder with MoE / rotary / ALiBi / GQA / KV cache / sliding window / LoRA / VLM projector.
import argparse, os, sys, math, time, logging, warnings
from datetime import timedelta
import torch, torch.utils.checkpoint, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--experts", type=int, default=4)
p.add_argument("--topk", type=int, default=1)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--kv-heads", type=int, default=2)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--ddp", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--pylog", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--port", type=int, default=37110)
args = p.parse_args()

V = 256
class Rotary(nn.Module):
    def __init__(self, hd, max_len):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        t = torch.arange(max_len).float()
        fr = torch.outer(t, inv)
        self.register_buffer("cos", fr.cos(), persistent=False)
        self.register_buffer("sin", fr.sin(), persistent=False)
    def forward(self, x, T, inplace=False):
        cos, sin = self.cos[:T], self.sin[:T]
        x1, x2 = x[..., ::2], x[..., 1::2]
        if inplace:
            a = x1 * cos - x2 * sin; b = x1 * sin + x2 * cos
            x[..., ::2] = a; x[..., 1::2] = b
            return x
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

def alibi_slopes(n):
    # standard formula assumes power of two
    m = 2 ** math.floor(math.log2(n)) if args.fault != "alibi" else 2 ** math.ceil(math.log2(n))
    return torch.tensor([2 ** (-8 * (i + 1) / m) for i in range(m)])

class Attn(nn.Module):
    def __init__(self, d, h, kvh):
        super().__init__()
        self.h, self.kvh, self.hd = h, kvh, d // h
        self.q = nn.Linear(d, d); self.k = nn.Linear(d, self.hd * kvh); self.v = nn.Linear(d, self.hd * kvh)
        self.o = nn.Linear(d, d)
        rot_len = 32 if args.fault == "rope_len" else 1024
        self.rot = Rotary(self.hd, rot_len)
        if args.fault == "alibi":
            self.register_buffer("slopes", alibi_slopes(6 if h == 4 else h), persistent=False)
    def forward(self, x, cache=None):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v(x).view(B, T, self.kvh, self.hd).transpose(1, 2)
        q = self.rot(q, T, inplace=(args.fault == "rope_inplace")); k = self.rot(k, T)
        if cache is not None:
            pk, pv = cache
            if args.fault == "kv_cache":
                k = torch.cat([pk, k], dim=1); v = torch.cat([pv, v], dim=1)
            else:
                k = torch.cat([pk, k], dim=2); v = torch.cat([pv, v], dim=2)
        rep = self.h // self.kvh
        k = k.repeat_interleave(rep, dim=1); v = v.repeat_interleave(rep, dim=1)
        S = k.shape[2]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        if args.fault == "alibi":
            pos = torch.arange(S)
            att = att + self.slopes[:, None, None] * (pos[None, :] - pos[:, None])[None]
        i = torch.arange(T)[:, None] + (S - T); j = torch.arange(S)[None, :]
        if args.fault == "swa_mask":
            mask = ((j > i) | (i - j >= 16)).long()
        else:
            mask = (j > i) | (i - j >= 16)
        if args.fault == "sdpa_causal":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask, is_causal=True)
        else:
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = att @ v
        if args.fault == "view_noncontig":
            y = y.transpose(1, 2).view(B, T, C)
        else:
            y = y.transpose(1, 2).reshape(B, T, C)
        return self.o(y), (k[:, ::rep], v[:, ::rep])

class MoE(nn.Module):
    def __init__(self, d, E, k):
        super().__init__()
        self.E, self.k = E, k
        self.router = nn.Linear(d, E, bias=False)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d)) for _ in range(E)])
        self.last_probs = None
    def forward(self, x):
        B, T, C = x.shape
        xf = x.reshape(-1, C)
        logits = self.router(xf)
        if args.fault == "moe_skew":
            logits = logits + torch.tensor([0., 0., 0., -1e4])[:self.E]   # bad init bias: expert 3 dead
        probs = logits.softmax(-1)
        w, idx = probs.topk(self.k, dim=-1)
        out = torch.zeros_like(xf)
        if args.fault == "ckpt_moe":
            # capacity annealing: allow more tokens per expert as training goes on
            self.calls = getattr(self, "calls", 0) + 1
            cap = min(xf.shape[0], 8 + 4 * self.calls)
        for e in range(self.E):
            sel = (idx == e).any(-1)
            if args.fault == "ckpt_moe":
                sel = sel & (sel.cumsum(0) <= cap)
            if sel.any():
                ww = (w * (idx == e)).sum(-1, keepdim=True)[sel]
                out[sel] = out[sel] + ww * self.experts[e](xf[sel])
        # switch-transformer load balancing loss
        frac = torch.stack([(idx == e).any(-1).float().mean() for e in range(self.E)])
        if args.fault == "aux_cache" and self.last_probs is not None:
            pm = self.last_probs
        else:
            pm = probs.mean(0)
        self.last_probs = pm
        if args.fault == "aux_log":
            aux = -(frac * torch.log(pm * frac)).sum()   # entropy-style, log(0) when an expert is empty
        else:
            aux = self.E * (frac * pm).sum()
        if args.fault == "aux_allreduce" and dist.is_initialized():
            counts = torch.bincount(idx.flatten())      # length depends on which experts got tokens
            dist.all_reduce(counts)
        return out.view(B, T, C), aux

class Block(nn.Module):
    def __init__(self, d, h, kvh, E, k):
        super().__init__()
        self.n1 = nn.LayerNorm(d); self.a = Attn(d, h, kvh); self.n2 = nn.LayerNorm(d); self.m = MoE(d, E, k)
    def forward(self, x):
        a, _ = self.a(self.n1(x)); x = x + a
        m, aux = self.m(self.n2(x)); return x + m, aux

class LoRALinear(nn.Module):
    def __init__(self, base, r=4):
        super().__init__()
        self.base = base; self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01); self.B = nn.Parameter(torch.zeros(base.out_features, r))
    def forward(self, x): return self.base(x) + x @ self.A.t() @ self.B.t()

class LM(nn.Module):
    def __init__(self, d, h, kvh, E, k, vision=False):
        super().__init__()
        self.emb = nn.Embedding(V, d); self.blocks = nn.ModuleList([Block(d, h, kvh, E, k) for _ in range(2)])
        nn.init.normal_(self.emb.weight, std=0.02); self.nf = nn.LayerNorm(d); self.head = nn.Linear(d, V, bias=False); self.head.weight = self.emb.weight
        if vision:
            vdim = 48
            self.vis = nn.Sequential(nn.Conv2d(3, vdim, 8, 8), nn.Flatten(2))
            self.proj = nn.Linear(64 if args.fault == "vlm_proj" else vdim, d)
    def forward(self, ids, img=None):
        x = self.emb(ids)
        if img is not None:
            v = self.vis(img).transpose(1, 2)
            x = torch.cat([self.proj(v), x], 1)
        aux = 0
        for b in self.blocks:
            if args.fault == "ckpt_moe" and self.training:
                x, a = torch.utils.checkpoint.checkpoint(b, x, use_reentrant=False)
            else:
                x, a = b(x)
            aux = aux + a
        return self.head(self.nf(x)), aux

def main(rank=None, world=None):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
    ddp = args.ddp or args.spawn
    if ddp:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    if args.pylog:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info if args.pylog else (lambda s: print(s, flush=True))
    torch.manual_seed(0)
    E = args.experts
    if args.fault == "model_mismatch" and rank == args.fault_rank:
        E = E + int(os.environ.get("EXTRA_EXPERTS", "0") or 1)
    vision = args.fault in ("vlm_proj", "vlm_ok")
    model = LM(args.dim, args.heads, args.kv_heads, E, args.topk, vision)
    if args.fault == "lora_merge":
        for b in model.blocks:
            b.a.q = LoRALinear(b.a.q)
    if args.fault == "lora_inject":
        targets = ("q", "v")
        for name, mod in model.named_modules():
            for cname, child in mod.named_children():
                if cname in targets and isinstance(child, nn.Linear):
                    setattr(mod, cname, LoRALinear(child))
                    say(f"lora: wrapped {name}.{cname}")
    say(f"model params: {sum(p.numel() for p in model.parameters())/1e3:.1f}K experts={E} topk={args.topk} heads={args.heads}/{args.kv_heads} world={world}")
    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, find_unused_parameters=args.find_unused)
    core = model.module if ddp else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
    if args.fault == "aux_log":
        torch.autograd.set_detect_anomaly(True)
    g = torch.Generator().manual_seed(rank)
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", mininterval=0)
    if args.fault == "kv_oom":
        # preallocate KV cache for generation eval: layers x 2 x B x kvh x max_len x hd
        max_len = 1 << 22
        say(f"allocating static KV cache max_len={max_len}")
        cache = torch.zeros(2, 2, 64, args.kv_heads, max_len, args.dim // args.heads)
    for step in it:
        if args.fault == "sched_first" and step == 0:
            sched.step()
        ids = torch.randint(0, V, (4, args.seq + 1), generator=g)
        seq = args.seq
        if args.fault == "rope_len" and step >= args.fault_step:
            seq = args.seq + 16     # curriculum: longer sequences after warm-up
            ids = torch.randint(0, V, (4, seq + 1), generator=g)
        img = torch.randn(4, 3, 32, 32, generator=g) if vision else None
        inp, tgt = ids[:, :-1], ids[:, 1:]
        if args.fault == "moe_skew" and rank == args.fault_rank and step >= args.fault_step:
            inp = torch.full_like(inp, 7)   # packed padding batch on this rank
        logits, aux = model(inp, img)
        if vision:
            logits = logits[:, -inp.shape[1]:]
        ce = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
        loss = ce + 0.01 * aux
        opt.zero_grad()
        loss.backward()
        if args.fault == "lora_merge" and step == args.fault_step:
            say("merging LoRA adapters into base weights for eval")
            for b in core.blocks:
                l = b.a.q
                l.base.weight += l.B @ l.A
        if args.fault == "kv_cache" and step == args.fault_step:
            say("running cached decode check")
            with torch.no_grad():
                x = core.emb(inp[:, :8]); a, c = core.blocks[0].a(core.blocks[0].n1(x))
                x2 = core.emb(inp[:, 8:9]); core.blocks[0].a(core.blocks[0].n1(x2), cache=c)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        say(f"step {step} loss {loss.item():.4f} ce {ce.item():.4f} aux {float(aux):.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e}")
        time.sleep(0.05)
    if args.fault == "safetensors":
        from safetensors.torch import save_file
        os.makedirs("/tmp/ct_ckpt", exist_ok=True)
        save_file(core.state_dict(), "/tmp/ct_ckpt/model.safetensors")
    say("training finished")
    if ddp:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
