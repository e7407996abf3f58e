"""DDP toy LM trainer with model.pt (rank 0) + per-rank optimizer/RNG shards (optim_rank{r}.pt).
Faults come from the environment / config (files on disk, flags), not from this code."""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--resume", default=None, help="checkpoint dir to resume from")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--vocab", type=int, default=256)
p.add_argument("--optim", default="adamw", choices=["adamw", "sgd", "adamw-groups"])
p.add_argument("--save-args", action="store_true", help="store argparse Namespace in checkpoint (old habit)")
p.add_argument("--ckpt-name", default="step{step}")
p.add_argument("--strict", type=int, default=1)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--scheduler", action="store_true")
args = p.parse_args()

if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()

class RankFilter(logging.Filter):
    def filter(self, rec):
        rec.rank = rank
        return True
log = logging.getLogger("trainer")
for h in logging.getLogger().handlers:
    h.addFilter(RankFilter())

def info(msg):
    if args.logging:
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)

class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(self.ln_f(h))

torch.manual_seed(0)
model = TinyLM(args.vocab, args.hidden, args.layers)
if args.optim == "sgd":
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
elif args.optim == "adamw-groups":
    decay = [p_ for n, p_ in model.named_parameters() if p_.dim() >= 2]
    no_decay = [p_ for n, p_ in model.named_parameters() if p_.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps) if args.scheduler else None

start = 0
if args.resume:
    info(f"resuming from {args.resume}")
    mpath = os.path.join(args.resume, "model.pt")
    sd = torch.load(mpath, map_location="cpu")
    res = model.load_state_dict(sd["model"], strict=bool(args.strict))
    if not args.strict:
        info(f"load_state_dict: missing={res.missing_keys} unexpected={res.unexpected_keys}")
    start = sd["step"]
    opath = os.path.join(args.resume, f"optim_rank{rank}.pt")
    osd = torch.load(opath, map_location="cpu")
    opt.load_state_dict(osd["optim"])
    torch.set_rng_state(osd["rng"])
    if sched is not None and "sched" in osd:
        sched.load_state_dict(osd["sched"])
    info(f"resumed at step {start}")

ddp = DDP(model)
g = torch.Generator().manual_seed(1234 + rank)
data = torch.randint(0, args.vocab, (512, 33), generator=g)
it = range(start, args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", initial=start, total=args.steps, position=rank, dynamic_ncols=False, ncols=90)

def save(step):
    d = os.path.join(args.ckpt_dir, args.ckpt_name.format(step=step, hidden=args.hidden, layers=args.layers, lr=opt.param_groups[0]["lr"], optim=args.optim, world=world, vocab=args.vocab))
    os.makedirs(d, exist_ok=True)
    if rank == 0:
        blob = {"model": model.state_dict(), "step": step}
        if args.save_args:
            blob["args"] = args
        torch.save(blob, os.path.join(d, "model.pt"))
    oblob = {"optim": opt.state_dict(), "rng": torch.get_rng_state()}
    if sched is not None:
        oblob["sched"] = sched.state_dict()
    torch.save(oblob, os.path.join(d, f"optim_rank{rank}.pt"))
    dist.barrier()
    info(f"saved checkpoint {d}")

t0 = time.time()
for step in it:
    idx = torch.randint(0, data.size(0), (8,))
    batch = data[idx]
    x, y = batch[:, :-1], batch[:, 1:]
    logits = ddp(x)
    loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step()
    if sched is not None:
        sched.step()
    if (step + 1) % 5 == 0:
        l = loss.detach().clone(); dist.all_reduce(l); l /= world
        msg = f"step {step+1}/{args.steps} loss {l.item():.4f} grad_norm {gn.item():.3f} lr {opt.param_groups[0]['lr']:.2e} {(time.time()-t0)/(step+1-start):.3f}s/it"
        if args.tqdm:
            it.set_postfix(loss=f"{l.item():.3f}")
            if rank == 0:
                it.write(msg)
        else:
            info(msg)
    if (step + 1) % args.save_every == 0:
        save(step + 1)
info("training done")
dist.barrier()
dist.destroy_process_group()
