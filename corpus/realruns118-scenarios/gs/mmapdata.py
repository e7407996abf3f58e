"""Token-file dataset prepared into / read from an mmap'ed .bin on a scratch tmpfs, then a tiny LM step loop."""
import argparse, os, sys, time, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--scratch", default="/work/rr118/gs/scratch")
p.add_argument("--fault", default="none", choices=["none", "memmap-write", "file-write", "short-file", "map-too-big"])
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--ntok", type=int, default=2_000_000)
p.add_argument("--steps", type=int, default=8)
a = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")
log = logging.getLogger("prep")
torch.set_num_threads(1)
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=25))
os.makedirs(a.scratch, exist_ok=True)
path = os.path.join(a.scratch, f"train_tokens_r{rank}.bin")
ntok = a.ntok
if a.fault in ("memmap-write", "file-write") and rank == a.fault_rank:
    ntok *= 3  # this rank owns the large shard (unbalanced split)
log.info("rank %d preparing %d tokens -> %s", rank, ntok, path)
g = np.random.default_rng(rank)
if a.fault == "file-write" and rank == a.fault_rank:
    with open(path, "wb") as f:
        for i in range(0, ntok, 1 << 18):
            f.write(g.integers(0, 512, size=min(1 << 18, ntok - i), dtype=np.int32).tobytes())
            if i % (1 << 20) == 0:
                log.info("wrote %d/%d tokens", i, ntok)
else:
    mm = np.memmap(path, dtype=np.int32, mode="w+", shape=(ntok,))
    for i in range(0, ntok, 1 << 18):
        mm[i:i + (1 << 18)] = g.integers(0, 512, size=min(1 << 18, ntok - i), dtype=np.int32)
        if i % (1 << 20) == 0:
            log.info("wrote %d/%d tokens", i, ntok)
    mm.flush(); del mm
if world > 1:
    dist.barrier()
# reader side: meta says ntok tokens
n_read = ntok
if a.fault == "short-file" and rank == a.fault_rank:
    # meta json from the full run, .bin from an interrupted copy
    with open(path, "r+b") as f:
        f.truncate(ntok * 4 // 3)
    log.info("resuming with cached %s", path)
if a.fault == "map-too-big" and rank == a.fault_rank:
    n_read = ntok
data = np.memmap(path, dtype=np.int32, mode="r", shape=(n_read,))
log.info("mapped %s: %d tokens", path, data.shape[0])
emb = nn.Embedding(512, 32); head = nn.Linear(32, 512)
params = list(emb.parameters()) + list(head.parameters())
opt = torch.optim.Adam(params, 1e-3)
for step in range(a.steps):
    off = np.random.randint(0, data.shape[0] - 129, size=8)
    x = torch.from_numpy(np.stack([data[o:o + 129] for o in off]).astype(np.int64))
    loss = F.cross_entropy(head(emb(x[:, :-1])).reshape(-1, 512), x[:, 1:].reshape(-1))
    if world > 1:
        for q in params:
            pass
        t = loss.detach().clone(); dist.all_reduce(t); t /= world
    else:
        t = loss
    opt.zero_grad(); loss.backward(); opt.step()
    log.info("step %d loss %.4f", step, t.item())
    time.sleep(0.1)
if world > 1:
    dist.barrier(); dist.destroy_process_group()
log.info("done")
