"""Tiny LM training with host-memory faults (ulimit -v / prlimit --as applied by the launcher)."""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "long-sample", "numpy-concat", "vocab-typo", "eval-gather", "near-limit"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--tslog", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
a = p.parse_args()

torch.set_num_threads(1)
ddp = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if a.tslog:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("train")
if ddp:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))

VOCAB = 512 if a.fault != "vocab-typo" else 5120000  # config typo: extra zeros
DIM = 64 if a.fault != "vocab-typo" else 1024
SEQ = 64

class TinyLM(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(VOCAB, DIM); s.pos = nn.Embedding(4096, DIM)
        s.blocks = nn.ModuleList([nn.TransformerEncoderLayer(DIM, 4, 4 * DIM, batch_first=True) for _ in range(2)])
        s.head = nn.Linear(DIM, VOCAB)
    def forward(s, x):
        h = s.emb(x) + s.pos(torch.arange(x.shape[1]))[None]
        for b in s.blocks:
            h = b(h)
        return s.head(h)

if a.fault == "near-limit":
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(DIM, 4, 4 * DIM, batch_first=True, norm_first=True), 1)
log.info("building model vocab=%d dim=%d world=%d", VOCAB, DIM, world)
model = TinyLM()
log.info("model params: %.2fM", sum(q.numel() for q in model.parameters()) / 1e6)
if ddp:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

# data: shards of token ids
rng = np.random.default_rng(rank)
shards = [rng.integers(0, VOCAB, size=(64, SEQ), dtype=np.int64) for _ in range(4)]
if a.fault == "numpy-concat" and rank in (a.fault_rank, -1):
    # feature cache for this rank built as float64 one-hot of all shards (bug: should be int ids)
    log.info("building one-hot feature cache for %d shards", len(shards))
    ids = np.concatenate(shards)
    onehot = np.zeros((ids.shape[0] * 40, SEQ, VOCAB), dtype=np.float64)
data = torch.from_numpy(np.concatenate(shards))
keep = []
it = range(a.steps)
if a.use_tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", mininterval=0)
for step in it:
    idx = torch.randint(0, data.shape[0], (8,))
    x = data[idx]
    if a.fault == "long-sample" and step == a.fault_step and rank == a.fault_rank:
        # packed sample from the long-document bucket, no max_len clip
        x = torch.randint(0, VOCAB, (8, 4096))
        log.info("step %d batch shape %s (long-document bucket)", step, tuple(x.shape))
    if a.fault == "near-limit":
        import resource
        lim = resource.getrlimit(resource.RLIMIT_AS)[0]
        vm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize")][0]
        if lim > 0 and vm > 0.85 * lim:
            warnings.warn(f"host memory high-water: VmSize {vm/2**30:.2f} GiB is {100*vm/lim:.0f}% of RLIMIT_AS {lim/2**30:.2f} GiB; allocation failures likely")
        keep.append(torch.empty(6 * 1024 * 1024, dtype=torch.uint8).fill_(1))  # cache of 6MB per step
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
    if a.fault == "eval-gather" and step == a.fault_step:
        # validation: keep full-vocab logits for every eval batch for metric computation
        outs = []
        with torch.no_grad():
            for j in range(200):
                outs.append(model(data[:64, :-1]))
            allp = torch.cat(outs).softmax(-1)
        log.info("eval ppl %.3f", float(allp.mean()))
    if not a.use_tqdm or step % 4 == 0:
        log.info("step %d loss %.4f", step, loss.item())
    time.sleep(0.15)
if ddp:
    dist.barrier()
log.info("training finished, %d steps", a.steps)
if ddp:
    dist.destroy_process_group()
