"""Per-rank shards of .npy sample files read by DataLoader workers.
--fault {none,truncated,missing,badheader} --fault-rank R --fault-sample K"""
import os, sys, argparse, json, time
import numpy as np, torch
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, MLP, wrap

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr63/al/data/npyshards")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-sample", type=int, default=37)
p.add_argument("--n", type=int, default=64)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--ts-log", action="store_true")
p.add_argument("--skip-bad", action="store_true", help="log and replace unreadable samples instead of failing")
a = p.parse_args()

rank, ws = setup()
if a.ts_log:
    import logging
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] rank%(rank)s %(name)s: %(message)s")
    _f = logging.getLogRecordFactory()
    def _rf(*x, **k):
        r = _f(*x, **k); r.rank = rank; return r
    logging.setLogRecordFactory(_rf)
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

# prepare this rank's shard (as a preprocessing job would have)
d = os.path.join(a.data, f"shard{rank:02d}")
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(rank)
files = []
for i in range(a.n):
    fn = os.path.join(d, f"sample_{i:05d}.npy")
    np.save(fn, rng.standard_normal(16).astype(np.float32))
    files.append(fn)
with open(os.path.join(d, "manifest.json"), "w") as f:
    json.dump(files, f)
if a.fault != "none" and rank == a.fault_rank:
    bad = files[a.fault_sample]
    if a.fault == "truncated":     # interrupted rsync: file cut short
        raw = open(bad, "rb").read()
        open(bad, "wb").write(raw[: len(raw) - 40])
    elif a.fault == "missing":     # cleanup job removed files after manifest was written
        os.remove(bad)
    elif a.fault == "badheader":   # file overwritten by a text error page from the object store
        open(bad, "w").write("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>\n")
if ws > 1:
    dist.barrier()

class NpyShard(Dataset):
    def __init__(self, manifest):
        self.files = json.load(open(manifest))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        if a.skip_bad:
            try:
                x = torch.from_numpy(np.load(self.files[i]))
            except Exception:
                import logging, traceback
                logging.getLogger("data").warning("unreadable sample %s, substituting zeros\n%s", self.files[i], traceback.format_exc())
                x = torch.zeros(16)
        else:
            x = torch.from_numpy(np.load(self.files[i]))
        y = int(abs(x.sum().item()) * 3) % 4
        return x, y

ds = NpyShard(os.path.join(d, "manifest.json"))
dl = DataLoader(ds, batch_size=a.bs, shuffle=False, num_workers=a.workers, persistent_workers=False)
torch.manual_seed(0)
model = wrap(MLP(), ws)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
lossf = torch.nn.CrossEntropyLoss()
log(f"world_size={ws} samples={len(ds)} batches/epoch={len(dl)} num_workers={a.workers}")
step = 0
for ep in range(a.epochs):
    for x, y in dl:
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step % 2 == 0:
            log(f"epoch {ep} step {step} loss {loss.item():.4f}")
    log(f"epoch {ep} done")
if ws > 1:
    dist.barrier()
    dist.destroy_process_group()
log("training complete")
