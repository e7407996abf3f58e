"""Tiny causal LM trained with DDP (gloo) over per-rank jsonl shards on node-local disks.

Meant to be started by torchrun on two 'nodes'. Faults come from the data, the
environment or the launch configuration, not from this file.
"""
import argparse, io, datetime, faulthandler, json, logging, os, sys, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--data-dir", required=True)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--collate", default="stack", choices=["stack", "pad"])
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--resume-from", default=None)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--noisy", action="store_true")
p.add_argument("--pid-dir", default=None)
p.add_argument("--step-sleep", type=float, default=0.3)
p.add_argument("--stage-flag", default=None, help="wait until this file exists before joining (data staging)")
p.add_argument("--barrier", default="plain", choices=["plain", "monitored"])
p.add_argument("--stall-dump", type=int, default=0)
p.add_argument("--stream-fifo", default=None)
a = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"]); local_rank = int(os.environ["LOCAL_RANK"])
host = os.environ.get("FAKE_HOST", "localhost")
if a.style == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] {host} rank{rank}: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[{host} rank{rank}] {msg}", flush=True)
if a.pid_dir:
    os.makedirs(a.pid_dir, exist_ok=True)
    open(os.path.join(a.pid_dir, f"rank{rank}.pid"), "w").write(str(os.getpid()))

if a.stage_flag:
    flag = a.stage_flag.format(rank=rank)
    log(f"waiting for data staging to finish ({flag})")
    while not os.path.exists(flag):
        time.sleep(1)

log(f"init_process_group backend=gloo world_size={world} local_rank={local_rank} master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.pg_timeout))
torch.manual_seed(0)

class Shard(Dataset):
    def __init__(self, path):
        self.recs = [json.loads(l) for l in open(path)]
        if a.stream_fifo:
            self.fifo = None
    def __len__(self):
        return len(self.recs)
    def __getitem__(self, i):
        r = self.recs[i]
        if a.stream_fifo and i == 42:
            # extra samples are streamed from the feature server through a named pipe
            if self.fifo is None:
                self.fifo = open(a.stream_fifo.format(rank=rank), "rb")
            extra = self.fifo.read(256)
        return torch.tensor(r["tokens"], dtype=torch.long), torch.tensor(r["weight"], dtype=torch.float32)

def pad_collate(batch):
    L = max(t.numel() for t, _ in batch)
    toks = torch.zeros(len(batch), L, dtype=torch.long)
    for i, (t, _) in enumerate(batch):
        toks[i, : t.numel()] = t
    return toks, torch.stack([w for _, w in batch])

class TinyLM(nn.Module):
    def __init__(self, V, d):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.head = nn.Linear(d, V)
    def forward(self, x):
        h = self.emb(x)
        z = self.ln1(h)
        att = self.q(z) @ self.k(z).transpose(1, 2) / z.shape[-1] ** 0.5
        L = x.shape[1]
        att = att.masked_fill(torch.triu(torch.ones(L, L, dtype=torch.bool), 1), float("-inf")).softmax(-1)
        h = h + att @ self.v(z)
        h = h + self.mlp(self.ln2(h))
        return self.head(h)

path = os.path.join(a.data_dir, f"shard_{rank:02d}.jsonl")
log(f"loading shard {path}")
ds = Shard(path)
dl = DataLoader(ds, batch_size=a.bs, shuffle=False, drop_last=True,
                collate_fn=pad_collate if a.collate == "pad" else None)
model = TinyLM(a.vocab, a.n_embd)
n_params = sum(p.numel() for p in model.parameters())
log(f"model params={n_params} shard_samples={len(ds)}")
ddp = DDP(model, find_unused_parameters=a.noisy)
opt = torch.optim.AdamW(ddp.parameters(), lr=a.lr)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.7)
if a.noisy:
    sched.step()   # warm-up counter advanced before the first optimizer step
    scaler = torch.amp.GradScaler("cuda", enabled=True)
start = 0
if a.resume_from:
    f = a.resume_from.format(rank=rank)
    log(f"resuming from {f}")
    st = torch.load(f)
    model.load_state_dict(st["model"]); opt.load_state_dict(st["opt"]); start = st["step"]

it = iter(dl)
bar = None
if a.style == "tqdm" and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=a.steps, desc="train", file=sys.stderr, ncols=90, mininterval=0)
t0 = time.time()
for step in range(start, a.steps):
    if a.stall_dump:
        faulthandler.dump_traceback_later(a.stall_dump, exit=False)
    try:
        toks, w = next(it)
    except StopIteration:
        it = iter(dl); toks, w = next(it)
    logits = ddp(toks[:, :-1])
    tok_loss = F.cross_entropy(logits.reshape(-1, a.vocab), toks[:, 1:].reshape(-1), reduction="none")
    loss = (tok_loss.view(toks.shape[0], -1).mean(1) * w).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step(); sched.step()
    l = loss.detach().clone(); dist.all_reduce(l); l /= world
    msg = f"step {step+1}/{a.steps} local_loss={loss.item():.4f} mean_loss={l.item():.4f} grad_norm={gn.item():.3f} lr={sched.get_last_lr()[0]:.2e}"
    if bar is not None:
        bar.update(1); bar.set_postfix(loss=f"{l.item():.3f}")
    log(msg)
    if a.ckpt_dir and a.save_every and (step + 1) % a.save_every == 0:
        d = a.ckpt_dir.format(rank=rank); os.makedirs(d, exist_ok=True)
        out = os.path.join(d, f"rank{rank}_step{step+1}.pt")
        buf = io.BytesIO()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, buf)
        with open(out, "wb") as fh:
            fh.write(buf.getvalue())
        log(f"saved {out}")
    time.sleep(a.step_sleep)
if a.stall_dump:
    faulthandler.cancel_dump_traceback_later()
if bar is not None:
    bar.close()
if a.barrier == "monitored":
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=a.pg_timeout), wait_all_ranks=True)
else:
    dist.barrier()
log(f"done in {time.time()-t0:.1f}s")
dist.destroy_process_group()
