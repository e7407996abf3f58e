"""Notebook family: DDP with torch.multiprocessing.spawn launched from a Jupyter notebook.
The worker lives in a module written with %%writefile (so spawn can import it).
python nb_ddp_spawn.py --fault {healthy,unused,bincount,model_mismatch,port_in_use,killed,slow_eval} --rank 1 --step 12 --port 359xx --out X.ipynb"""
import argparse, sys
sys.path.insert(0, "/work/rr77/ca/tools")
from nbmk import write_nb
ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="healthy"); ap.add_argument("--out", required=True)
ap.add_argument("--rank", type=int, default=1); ap.add_argument("--step", type=int, default=12)
ap.add_argument("--port", type=int, default=35931); ap.add_argument("--world", type=int, default=2)
a = ap.parse_args()
mod = "ddp_worker_" + a.fault

worker = r'''%%writefile {mod}.py
import os, time, math, logging, datetime, random
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

FAULT, FAULT_RANK, FAULT_STEP = {fault!r}, {rank}, {step}

def build_vocab(texts):
    vocab = {{"<pad>": 0, "<unk>": 1}}
    for t in texts:
        for w in t.split():
            vocab.setdefault(w, len(vocab))
    return vocab

class Tagger(nn.Module):
    def __init__(self, vocab_size, dim=32, n_cls=4):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim)
        self.body = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.cls = nn.Linear(dim, n_cls)
        self.aux = nn.Linear(dim, 1)          # auxiliary "has entity" head
    def forward(self, x, has_pos):
        h = self.body(self.emb(x).mean(1))
        out = self.cls(h)
        if has_pos:                           # aux loss only when the batch has positive examples
            return out, self.aux(h).squeeze(-1)
        return out, None

def run(rank, world_size, port, steps=40):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{{rank}}] %(levelname)s %(message)s", force=True)
    log = logging.getLogger("train")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=25))
    torch.manual_seed(1234 + rank); random.seed(rank)
    words = ["w%d" % i for i in range(40 if FAULT != "model_mismatch" else 400)]
    random.seed(0)
    texts = [" ".join(random.choice(words) for _ in range(8)) for _ in range(256 if FAULT != "model_mismatch" else 40)]
    if FAULT == "model_mismatch":
        vocab = build_vocab(texts[rank::world_size])          # vocab from this rank's shard only
    else:
        vocab = build_vocab(texts)
    torch.manual_seed(1234)
    model = Tagger(len(vocab))
    log.info("vocab=%d params=%d", len(vocab), sum(p.numel() for p in model.parameters()))
    ddp = DDP(model, find_unused_parameters=(FAULT == "healthy"))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(steps):
        x = torch.randint(2, len(vocab), (16, 8), generator=g)
        y = torch.randint(0, 4, (16,), generator=g)
        has_pos = bool((y == 3).any()) if FAULT in ("healthy", "unused", "unused_local") else True
        if FAULT in ("unused", "unused_local") and rank == FAULT_RANK and step >= FAULT_STEP:
            y = y.clamp(max=2); has_pos = bool((y == 3).any())   # this shard has no entity labels later on
        logits, aux = ddp(x, has_pos)
        loss = F.cross_entropy(logits, y)
        if aux is not None:
            loss = loss + 0.1 * F.binary_cross_entropy_with_logits(aux, (y == 3).float())
        opt.zero_grad(); loss.backward(); opt.step()
        # per-class prediction counts for the metrics line
        counts = torch.bincount(logits.argmax(-1)) if FAULT == "bincount" else torch.bincount(logits.argmax(-1), minlength=4)
        l = loss.detach().clone()
        if FAULT != "unused_local":               # unused_local: metrics are logged per rank, not reduced
            dist.all_reduce(counts)
            dist.all_reduce(l); l /= world_size
        if rank == 0 and step % 5 == 0:
            log.info("step %d loss %.4f pred_counts %s", step, l.item(), counts.tolist())
        if FAULT == "slow_eval" and step == FAULT_STEP:
            # each rank evaluates its own validation shard, then all meet at a monitored barrier
            n_val = 4000 if rank == FAULT_RANK else 200        # shards built from per-rank file lists
            with torch.no_grad():
                for i in range(n_val):
                    ddp.module(torch.randint(2, len(vocab), (64, 8)), False)
                    if i % 50 == 0: time.sleep(0.05)
            log.info("eval done (%d batches)", n_val)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=8), wait_all_ranks=True)
    if rank == 0:
        log.info("training finished")
    dist.destroy_process_group()
'''.format(mod=mod, fault=a.fault, rank=a.rank, step=a.step)

cells = []
cells.append("""
import os, sys, time, datetime
import torch
import torch.multiprocessing as mp
print(torch.__version__, "cpus:", os.cpu_count())
""")
cells.append(worker)
if a.fault == "bincount":
    cells.append("""os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"   # to debug the earlier hang""")
if a.fault == "port_in_use":
    cells.append("""
# quick single-process sanity check of the collective setup inside the kernel
import torch.distributed as dist
os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "%d"
dist.init_process_group("gloo", rank=0, world_size=1, timeout=datetime.timedelta(seconds=20))
t = torch.ones(3); dist.all_reduce(t); print("single-rank all_reduce ok:", t)
""" % a.port)
pre = ""
if a.fault == "killed":
    # the host's OOM killer stand-in: SIGKILL the rank-N child process after a few seconds
    pre = """
import signal, threading, subprocess
def _reaper():
    time.sleep(9)
    kids = subprocess.run(["pgrep", "-f", "spawn_main"], capture_output=True, text=True).stdout.split()
    kids = sorted(int(k) for k in kids if int(k) != os.getpid())
    if len(kids) > %d: os.kill(kids[%d], signal.SIGKILL)
threading.Thread(target=_reaper, daemon=True).start()
""" % (a.rank, a.rank)
steps = 400 if a.fault == "killed" else 40
cells.append(pre + """
import importlib, %(mod)s
importlib.reload(%(mod)s)
t0 = time.time()
mp.spawn(%(mod)s.run, args=(%(world)d, %(port)d, %(steps)d), nprocs=%(world)d, join=True)
print(f"done in {time.time()-t0:.1f}s")
""" % dict(mod=mod, world=a.world, port=a.port, steps=steps))
write_nb(cells, a.out)
