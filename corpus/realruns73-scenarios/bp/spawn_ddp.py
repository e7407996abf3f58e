"""Plain DDP on a tiny GPT-2 with per-rank on-disk shards. --mode spawn uses torch.multiprocessing.spawn,
--mode env expects a launcher (torchrun) environment. --fault selects the bug, --fault-rank its rank."""
import argparse, os, sys, json, time, math, warnings
from datetime import timedelta
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch, torch.nn as nn
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="spawn")
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=34150)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--data", default="/work/rr73/bp/runs/shards")
    p.add_argument("--workers", type=int, default=0)
    return p.parse_args()

def write_shards(root, world, fault, fault_rank, tok):
    for r in range(world):
        d = os.path.join(root, f"rank{r}")
        os.makedirs(d, exist_ok=True)
        texts = tinyhf.sentences(400, seed=10 + r)
        per_sample = fault == "fdleak" and r == fault_rank   # this shard came from the streaming exporter
        if per_sample:
            for i, t in enumerate(texts):
                with open(os.path.join(d, f"{i:05d}.json"), "w") as f:
                    json.dump({"text": t}, f)
        else:
            with open(os.path.join(d, "00000.jsonl"), "w") as f:
                for i, t in enumerate(texts):
                    rec = {"text": t}
                    if fault == "badrecord" and r == fault_rank and i == 137:
                        rec = {"txt": t, "src": "forum-scrape-v2"}   # one upstream source used another field name
                    f.write(json.dumps(rec) + "\n")

class ShardDataset(Dataset):
    def __init__(self, root, tok, pad=True):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root))
        self.tok, self.pad = tok, pad
        self.handles = {}
        self.index = []
        for fi, fn in enumerate(self.files):
            if fn.endswith(".jsonl"):
                with open(fn) as f:
                    self.index += [(fi, ln) for ln, _ in enumerate(f)]
            else:
                self.index.append((fi, 0))
    def _fh(self, fi):
        # keep handles open between epochs so re-reads are cheap
        if fi not in self.handles:
            self.handles[fi] = open(self.files[fi])
        fh = self.handles[fi]; fh.seek(0)
        return fh
    def __len__(self):
        return len(self.index)
    def __getitem__(self, i):
        fi, ln = self.index[i]
        fh = self._fh(fi)
        for k, line in enumerate(fh):
            if k == ln:
                rec = json.loads(line); break
        if self.pad:
            enc = self.tok(rec["text"], padding="max_length", truncation=True, max_length=20, return_tensors="pt")
        else:
            enc = self.tok(rec["text"], truncation=True, max_length=20, return_tensors="pt")
        return enc["input_ids"][0], enc["attention_mask"][0]

def setup_distributed(rank, world, port):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))

def worker(rank, world, a):
    if a.mode == "spawn":
        setup_distributed(rank, world, a.port)
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    if a.fault == "pgtwice":
        # metrics helper from the shared utils module also "makes sure" distributed is up
        setup_distributed(rank, world, a.port)
    torch.manual_seed(0)
    tok = tinyhf.make_tokenizer()
    if rank == 0:
        write_shards(a.data, world, a.fault, a.fault_rank, tok)
        os.makedirs(a.data, exist_ok=True)
    dist.barrier()
    pad = not (a.fault == "nopad-shard" and rank == a.fault_rank)
    ds = ShardDataset(os.path.join(a.data, f"rank{rank}"), tok, pad=pad)
    dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=a.workers, drop_last=True)
    model = DDP(tinyhf.make_model(tok))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"[rank {rank}] {len(ds)} samples from {len(ds.files)} files, {len(dl)} batches/epoch", flush=True)
    step, t0 = 0, time.time()
    while step < a.steps:
        for ids, mask in dl:
            step += 1
            labels = ids.masked_fill(mask == 0, -100)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward(); opt.step(); opt.zero_grad()
            if step % 5 == 0:
                l = loss.detach().clone(); dist.all_reduce(l); l /= world
                if rank == 0:
                    print(f"step {step:4d} | loss {l.item():.4f} | {(time.time()-t0)/step*1000:.0f} ms/step", flush=True)
            if a.step_sleep:
                time.sleep(a.step_sleep)
            if step >= a.steps:
                break
    dist.barrier()
    if rank == 0:
        print("done: trained", step, "steps", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    a = get_args()
    if a.mode == "spawn":
        mp.spawn(worker, args=(a.nprocs, a), nprocs=a.nprocs, join=True)
    else:
        worker(int(os.environ["RANK"]) if "RANK" in os.environ else 0, int(os.environ.get("WORLD_SIZE", 1)), a)
