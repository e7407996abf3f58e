"""Token-file dataset + DataLoader workers under DDP. --fault selects a data-pipeline failure on --fault-rank."""
import argparse, os, sys, time, json, warnings, signal
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr65/aq/tmp/data")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

def make_data():
    os.makedirs(args.data, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(64):
        n = 24
        rec = {"id": i, "tokens": torch.randint(0, 100, (n,), generator=g).tolist(), "label": i % 4}
        with open(os.path.join(args.data, f"{i:05d}.json"), "w") as f: json.dump(rec, f)

class TokDS(Dataset):
    def __init__(s, root, bad=False):
        s.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".json"))
        s.bad = bad
        s.label_map = {0: "neg", 1: "pos", 2: "neutral", 3: "mixed"}
        s.label_ids = {"neg": 0, "pos": 1, "neutral": 2, "mixed": 3}
    def __len__(s): return len(s.files)
    def __getitem__(s, i):
        with open(s.files[i]) as f: rec = json.load(f)
        toks = rec["tokens"]
        if s.bad == "ragged":
            toks = toks[: 16 + (rec["id"] % 5)]       # truncation applied before dedup, lengths now vary
        else:
            toks = toks[:16]
        if s.bad == "label" and rec["id"] % 7 == 3:
            lab = s.label_ids[rec.get("label_name", "Mixed ")]  # raw label string from the newer export
        else:
            lab = rec["label"]
        if s.bad == "killed" and rec["id"] == 21:
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.tensor(toks), torch.tensor(lab)

if __name__ == "__main__":
    if rank == 0 and not os.path.isdir(args.data): make_data()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    dist.barrier()
    bad = args.fault if rank == args.fault_rank else False
    ds = TokDS(args.data, bad=bad)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    dl = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=args.workers)
    if args.noise and rank == 0:
        warnings.warn("This DataLoader will create 2 worker processes in total. Our suggested max number of worker in current system is 1, which is smaller than what this DataLoader is going to create. Please be aware that excessive worker creation might get DataLoader running slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.", UserWarning)
    model = nn.Sequential(nn.Embedding(100, 16), nn.Flatten(), nn.Linear(16 * 16, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    it_wrap = (lambda x, **k: x)
    if args.tqdm:
        from tqdm import tqdm
        it_wrap = tqdm
    for ep in range(args.epochs):
        sampler.set_epoch(ep)
        for i, (x, y) in enumerate(it_wrap(dl, desc=f"rank{rank} epoch {ep}", disable=False) if args.tqdm else dl):
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            time.sleep(0.05)
        if rank == 0:
            print(f"epoch {ep} done, last loss {loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0: print("training complete", flush=True)
    dist.destroy_process_group()
