"""Tiny compiled classifier training; flags select a Dynamo-level fault, the rank and the step."""
import argparse, os, sys, time, math, logging, datetime
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)   # -1 = every rank
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--ddp", action="store_true")
p.add_argument("--compile-inner", action="store_true", help="compile the module, then wrap it in DDP")
p.add_argument("--fmt", default="plain", choices=["plain", "logging", "tqdm"])
p.add_argument("--recompile-limit", type=int, default=8)
p.add_argument("--strict-recompile", action="store_true")
p.add_argument("--static-shapes", action="store_true", help="torch.compile(dynamic=False)")
p.add_argument("--backend", default="inductor")
p.add_argument("--freeze-after", type=int, default=-1, help="set_stance(fail_on_recompile) after this step")
p.add_argument("--partial-last-batch", action="store_true", help="last batch of the epoch has 5 rows (drop_last=False)")
p.add_argument("--ragged", action="store_true", help="variable sequence length per batch")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))

if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
def say(msg):
    if args.fmt == "logging": log.info(msg)
    else: print(f"[rank{rank}] {msg}" if world > 1 else msg, flush=True)

torch._dynamo.config.recompile_limit = args.recompile_limit
if args.strict_recompile:
    torch._dynamo.config.fail_on_recompile_limit_hit = True

faulty = args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank)

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d); self.fc1 = nn.Linear(d, 4 * d); self.fc2 = nn.Linear(4 * d, d)
    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))

class Net(nn.Module):
    def __init__(self, vocab=128, d=64, n=2, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, classes)
        self.debug = False       # switched on by the fault flags below
        self.gate = False
        self.temperature = 1.0
        self.step = 0
    def forward(self, ids):
        h = self.emb(ids)
        for b in self.blocks:
            h = b(h)
        if self.debug == "print":
            print("hidden stats", h.shape, h.dtype)
        if self.debug == "deepcopy":
            import copy
            snapshot = copy.deepcopy(h)           # keep pre-pool activations for the probe
            self.last_hidden = snapshot
        if self.debug == "timer":
            t0 = time.perf_counter()
            h = h * 1.0
            self.fwd_time = time.perf_counter() - t0
        if self.gate and h.abs().mean() > 0.5:    # skip-gate once activations are large
            h = h * 0.5
        if self.debug == "anneal":
            h = h / self.temperature               # temperature annealed every step
        if self.debug == "stepcount":
            h = h * (1.0 + 0.0 * self.step)        # step counter read inside forward
        pooled = h.mean(dim=1)
        return self.head(pooled)

torch.manual_seed(0)
model = Net()
ckw = dict(fullgraph=args.fullgraph, dynamic=False if args.static_shapes else None, backend=args.backend)
if world > 1 and args.ddp:
    from torch.nn.parallel import DistributedDataParallel as DDP
    if args.compile_inner:
        cmodel = DDP(torch.compile(model, **ckw))
    else:
        cmodel = torch.compile(DDP(model), **ckw)
else:
    cmodel = torch.compile(model, **ckw)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

g = torch.Generator().manual_seed(rank + 1)
it = range(args.steps)
if args.fmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", file=sys.stderr, mininterval=0)
say(f"start: world={world} compile fullgraph={args.fullgraph} params={sum(p.numel() for p in model.parameters())}")
t_start = time.time()
for step in it:
    if faulty and step == args.fault_step:
        if args.fault in ("print", "deepcopy", "timer", "anneal", "stepcount"):
            model.debug = args.fault
        if args.fault == "gate":
            model.gate = True
    model.temperature = 1.0 / (1.0 + 0.1 * step)
    model.step = step
    seq = 16
    if args.ragged:
        seq = 8 + (step * 5) % 23
    bs = 5 if (args.partial_last_batch and step == args.steps - 1) else 8
    ids = torch.randint(0, 128, (bs, seq), generator=g)
    y = torch.randint(0, 5, (bs,), generator=g)
    if step == args.freeze_after:
        torch.compiler.set_stance("fail_on_recompile")
        say(f"warmup done at step {step}: compile stance set to fail_on_recompile")
    t0 = time.time()
    logits = cmodel(ids)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad(); loss.backward()
    if world > 1 and not args.ddp:
        for p_ in model.parameters():
            dist.all_reduce(p_.grad); p_.grad /= world
    opt.step()
    if args.fmt == "tqdm":
        it.set_postfix(loss=f"{loss.item():.4f}")
    else:
        say(f"step {step} loss {loss.item():.4f} seq {seq} dt {time.time()-t0:.2f}s")
say(f"training finished in {time.time()-t_start:.1f}s")
if world > 1:
    dist.barrier(); dist.destroy_process_group()
