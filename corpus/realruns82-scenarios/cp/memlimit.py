"""Memory-pressure training scenarios (CPU). Flags choose the phase that blows the host budget."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--phase", default="none", choices=["none", "construct", "forward", "optim", "ckpt", "worker", "leak", "cache"])
p.add_argument("--rank-fault", type=int, default=-1, help="only this rank gets the bad config (-1 = all)")
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--big-hidden", type=int, default=16384)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--big-batch", type=int, default=200000)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--ckpt", default="/work/rr82/cp/tmp/ckpt.pt")
p.add_argument("--log", "--tslog", dest="log", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--seqlen", type=int, default=64)
p.add_argument("--mmap", action="store_true", help="memory-map the checkpoint instead of reading it into RAM")
args = p.parse_args()

dist = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.log:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
def say(msg):
    if args.log: log.info(msg)
    else: print(f"[rank{rank}] {msg}" if dist else msg, flush=True)

if dist:
    import torch.distributed as tdist
    tdist.init_process_group("gloo", timeout=timedelta(seconds=40))
torch.manual_seed(0); torch.set_num_threads(1)
bad = args.rank_fault in (-1, rank)

def rss_mb():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) // 1024
    return -1

class MLP(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.inp = nn.Linear(64, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(n)])
        self.out = nn.Linear(d, 10)
    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks: h = h + b(h)
        return self.out(h)

class DS(torch.utils.data.Dataset):
    def __init__(self, n, heavy=False): self.n, self.heavy = n, heavy; self.cache = {}
    def __len__(self): return self.n
    def __getitem__(self, i):
        if self.heavy:
            # "augmentation" that materialises a full mixup bank per sample
            bank = torch.randn(args.big_batch, 64 * 64)
            x = bank.mean(0)[:64]
        else:
            x = torch.randn(64)
        return x, torch.tensor(i % 10)

hidden = args.big_hidden if (args.phase == "construct" and bad) else args.hidden
say(f"building model hidden={hidden} layers={args.layers} world={world}")
model = MLP(hidden, args.layers)
say(f"params={sum(p.numel() for p in model.parameters())/1e6:.2f}M rss={rss_mb()}MB")
if args.phase == "ckpt":
    if rank == 0 and not os.path.exists(args.ckpt):
        pass
    say(f"resuming from {args.ckpt}")
    sd = torch.load(args.ckpt, map_location="cpu", weights_only=True, mmap=args.mmap)
    model.load_state_dict(sd["model"]) if "model" in sd else None
    say("checkpoint loaded")
if dist:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ds = DS(4096, heavy=(args.phase == "worker" and bad))
dl = torch.utils.data.DataLoader(ds, batch_size=args.batch, num_workers=args.workers, shuffle=True)
it = iter(dl)
history = []   # for the loss curve
feat_cache = {}
rng = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    rng = tqdm(rng, desc=f"rank{rank}", mininterval=0, ascii=True, file=sys.stderr)
for step in rng:
    try: x, y = next(it)
    except StopIteration: it = iter(dl); x, y = next(it)
    if args.phase == "forward" and bad and step == 2:
        say(f"step {step}: switching to eval-sized batch {args.big_batch}")
        x = torch.randn(args.big_batch, 64); y = torch.randint(0, 10, (args.big_batch,))
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    if args.phase == "leak" and bad:
        history.append(loss)          # keeps the whole graph of every step alive
        history.append(logits)
    else:
        history.append(loss.item())
    if args.phase == "cache" and bad:
        # per-step feature cache keyed by step (never evicted)
        feat_cache[step] = torch.randn(args.big_batch // 10, 1024)
    opt.zero_grad(set_to_none=True)
    if args.phase == "leak" and bad:
        loss.backward(retain_graph=True)
    else:
        loss.backward()
    if args.phase == "optim" and bad and step == 0:
        say("creating optimizer state (AdamW exp_avg/exp_avg_sq)")
    opt.step()
    if step % 5 == 0 or args.phase in ("leak", "cache"):
        msg = f"step {step} loss {loss.item():.4f} rss={rss_mb()}MB"
        if args.tqdm: rng.write(msg)
        else: say(msg)
    if rss_mb() > 400 and step % 10 == 0:
        warnings.warn(f"host memory high: rss={rss_mb()}MB, consider reducing batch size", RuntimeWarning)
if dist:
    tdist.barrier(); tdist.destroy_process_group()
say(f"done. final loss {history[-1] if not torch.is_tensor(history[-1]) else history[-1].item():.4f}")
