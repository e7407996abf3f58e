"""Mixed-precision training on CPU (tiny transformer-ish LM). --fault picks the bug; --rank-fault picks the rank."""
import argparse, os, sys, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "bf16-head", "fp16-mask", "fp16-cdist", "scaler-half", "unscale-twice",
                                                   "step-noscale", "pin-prefetch", "healthy-cuda-scaler", "healthy-pin", "healthy-fp16-skip"])
p.add_argument("--rank-fault", type=int, default=-1)
p.add_argument("--amp-dtype", default="bfloat16")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", default="36860")
p.add_argument("--tslog", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

V, D, T = 200, 64, 32

class Attn(nn.Module):
    def __init__(self, fill=-1e9):
        super().__init__(); self.fill = fill; self.qkv = nn.Linear(D, 3 * D); self.o = nn.Linear(D, D)
    def forward(self, x, pad_mask):
        q, k, v = self.qkv(x).chunk(3, -1)
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        s = s.masked_fill(pad_mask[:, None, :], self.fill if self.fill is not None else torch.finfo(s.dtype).min)
        return self.o(s.softmax(-1) @ v)

class LM(nn.Module):
    def __init__(self, proto=False, fill=None):
        super().__init__()
        self.emb = nn.Embedding(V, D); self.attn = Attn(fill); self.ln = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        self.head = nn.Linear(D, V)
        self.proto = nn.Parameter(torch.randn(16, D)) if proto else None
    def forward(self, ids, pad_mask):
        h = self.emb(ids); h = h + self.attn(self.ln(h), pad_mask); h = h + self.ff(h)
        if self.proto is not None:   # prototype-distance auxiliary feature
            h = h + torch.cdist(h, self.proto.expand(h.shape[0], -1, -1)).mean(-1, keepdim=True)
        return h

def batches(rank, n):
    g = torch.Generator().manual_seed(rank)
    for _ in range(n):
        ids = torch.randint(0, V, (8, T), generator=g)
        lens = torch.randint(T // 2, T + 1, (8,), generator=g)
        pad = torch.arange(T)[None, :] >= lens[:, None]
        yield ids, pad

def main(local_rank=0, spawn_world=0):
    if spawn_world:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=args.port, RANK=str(local_rank), WORLD_SIZE=str(spawn_world))
    dist = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if args.tslog:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s", force=True)
    log = logging.getLogger("amp")
    say = (lambda m: log.info(m)) if args.tslog else (lambda m: print(f"[rank{rank}] {m}" if dist else m, flush=True))
    torch.set_num_threads(1); torch.manual_seed(0)
    if dist:
        import torch.distributed as td
        td.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    bad = args.rank_fault in (-1, rank)
    f = args.fault if bad else "none"
    amp_dtype = getattr(torch, args.amp_dtype)
    model = LM(proto=(f == "fp16-cdist"), fill=-1e9 if f == "fp16-mask" else None)
    if f in ("fp16-mask", "fp16-cdist", "scaler-half"):
        say("casting model to float16 to halve host memory")
        model = model.half()
    head_fp32 = model.head
    if dist:
        model = nn.parallel.DistributedDataParallel(model)
        core = model.module
    else:
        core = model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    if f == "healthy-cuda-scaler":
        scaler = torch.cuda.amp.GradScaler()
    elif f == "healthy-fp16-skip":
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 24, growth_interval=20)
    else:
        scaler = torch.amp.GradScaler("cpu", enabled=f in ("scaler-half", "unscale-twice", "step-noscale"))
    say(f"amp dtype={args.amp_dtype} scaler_enabled={scaler.is_enabled()} world={world} params={sum(p.numel() for p in model.parameters())}")
    data = list(batches(rank, args.steps))
    if f in ("healthy-pin", "pin-prefetch"):
        ds = torch.utils.data.TensorDataset(torch.stack([d[0] for d in data]), torch.stack([d[1] for d in data]))
        dl = torch.utils.data.DataLoader(ds, batch_size=None, pin_memory=True, num_workers=1 if f == "healthy-pin" else 0)
        data = list(dl)
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, ascii=True, mininterval=0, desc="train")
    for step in it:
        ids, pad = data[step]
        if f == "pin-prefetch" and step >= args.fault_step:
            # overlap host->device copy with compute (prefetcher copied from the GPU codebase)
            ids, pad = ids.pin_memory(), pad.pin_memory()
        ctx = torch.autocast("cpu", dtype=amp_dtype, enabled=f not in ("fp16-mask", "fp16-cdist", "scaler-half"))
        with ctx:
            h = model(ids, pad)
            if f == "bf16-head":
                logits0 = core.head(h)
            else:
                logits = core.head(h)
        if f == "bf16-head":
            # temperature/label calibration applied in full precision outside autocast
            calib = torch.eye(V) / 1.5
            # head evaluated in full precision for numerical stability
            logits = logits0 @ calib if step >= args.fault_step else core.head(h.float())
        loss = F.cross_entropy(logits.float().reshape(-1, V), ids.roll(-1, 1).reshape(-1))
        opt.zero_grad(set_to_none=True)
        if f == "step-noscale":
            loss.backward()       # forgot scaler.scale(...)
        else:
            scaler.scale(loss).backward()
        if f in ("unscale-twice", "healthy-fp16-skip", "scaler-half", "healthy-cuda-scaler") or scaler.is_enabled():
            scaler.unscale_(opt)
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if f == "unscale-twice" and step >= args.fault_step:
                # grad-norm logging helper (unscales again before measuring)
                scaler.unscale_(opt)
        prev = scaler.get_scale() if scaler.is_enabled() else 1.0
        scaler.step(opt); scaler.update()
        if scaler.is_enabled() and scaler.get_scale() < prev:
            warnings.warn(f"step {step}: gradient overflow (inf/nan), optimizer step skipped, loss scale {prev:.3g} -> {scaler.get_scale():.3g}")
        if step % 5 == 0 or f == "healthy-fp16-skip" and step < 12:
            msg = f"step {step} loss {loss.item():.4f} scale {scaler.get_scale() if scaler.is_enabled() else 1.0:.1f}"
            if args.tqdm: it.write(msg)
            else: say(msg)
    if dist:
        import torch.distributed as td
        td.barrier(); td.destroy_process_group()
    say(f"finished {args.steps} steps, final loss {loss.item():.4f}")

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
