"""Tiny compiled training loop; --fault selects an induced problem on --fault-rank at --fault-step."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--backend", default="eager")
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--dynamic", default=None)
p.add_argument("--ddp", action="store_true")
p.add_argument("--log", "--pylogging", dest="log", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--compile-inner", action="store_true")
p.add_argument("--varbatch", action="store_true")
p.add_argument("--print-every", type=int, default=2)
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def out(msg):
    if args.log: log.info(msg)
    else: print(msg, flush=True)

rank, world = 0, 1
if args.ddp:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self, fault, on):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 10)
        self.fault, self.on = fault, on
        self.temp = 1.0
    def forward(self, x, step=0):
        h = self.emb(x).mean(1)
        h = F.gelu(self.l1(h))
        if self.on and self.fault == "datadep" and step >= 0:
            # normalise only when activations are large (data-dependent branch)
            if h.abs().max() > 0.5:
                h = h / h.abs().max()
        if self.on and self.fault == "item":
            scale = h.norm().item()
            print(f"debug act norm {scale:.3f}")
            h = h / scale
        if self.on and self.fault == "nonzero":
            idx = torch.nonzero(h.sum(1) > 0).squeeze(1)
            h = h[idx].repeat(1, 1)[: x.shape[0]] if idx.numel() == x.shape[0] else h
        if self.on and self.fault == "recompile":
            h = h * self.temp
        if self.on and self.fault == "badshape":
            h = h @ self.l2.weight  # wrong: should go through l2
        return self.l2(h)

on = (rank == args.fault_rank) or args.fault in ("cxx", "recompile_all")
fault = "recompile" if args.fault == "recompile_all" else args.fault
model = Net(fault, on)
if args.fault == "recompile" or args.fault == "recompile_all":
    import torch._dynamo
    torch._dynamo.config.recompile_limit = 4
    torch._dynamo.config.fail_on_recompile_limit_hit = True
kw = {"backend": args.backend, "fullgraph": args.fullgraph}
if args.dynamic is not None:
    kw["dynamic"] = args.dynamic == "true"
if args.ddp:
    from torch.nn.parallel import DistributedDataParallel as DDP
    if args.compile_inner:
        cmodel = DDP(torch.compile(model, **kw))
    else:
        model = DDP(model)
        cmodel = torch.compile(model, **kw)
else:
    cmodel = torch.compile(model, **kw)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
out(f"rank {rank}/{world}: model compiled with {kw}, params={sum(p.numel() for p in model.parameters())}")

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=80)
t0 = time.time()
for step in it:
    bs = 16
    if args.varbatch and step >= args.fault_step:
        bs = 16 + step
    x = torch.randint(0, 100, (bs, 12))
    y = torch.randint(0, 10, (bs,))
    inner = model.module if (args.ddp and not args.compile_inner) else model
    if fault == "recompile" and on:
        inner.temp = 1.0 + 0.1 * step  # python float attribute -> guard on value
    logits = cmodel(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % args.print_every == 0 or step == args.steps - 1:
        msg = f"step {step} loss {loss.item():.4f} lr 1.0e-03 elapsed {time.time()-t0:.1f}s"
        if args.tqdm and rank == 0: it.write(msg)
        else: out(f"[rank{rank}] {msg}")
if args.ddp:
    dist.barrier()
out(f"rank {rank}: training done")
if args.ddp:
    dist.destroy_process_group()
