import argparse, os, sys, json, time, glob, logging, warnings, datetime, signal, ctypes
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, IterableDataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-idx", type=int, default=37)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--datadir", default="data")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--tslog", type=int, default=0)
p.add_argument("--tqdm", type=int, default=0)
p.add_argument("--dl-timeout", type=int, default=0)
p.add_argument("--no-dist-sampler", type=int, default=0)
p.add_argument("--corrupt", default="")
p.add_argument("--mpctx", default="")
p.add_argument("--bag", type=int, default=0)
args = p.parse_args()

def make_data(d, n=128, corrupt="", bad=37):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        fn = os.path.join(d, f"sample_{i:05d}.npy")
        if not os.path.exists(fn):
            np.save(fn, rng.standard_normal(16).astype(np.float32))
    jl = os.path.join(d, "labels.jsonl")
    if not os.path.exists(jl):
        with open(jl, "w") as f:
            for i in range(n):
                rec = {"file": f"sample_{i:05d}.npy", "label": int(i % 4), "text": f"sample text {i}"}
                if corrupt == "nonelabel" and i == bad: rec["label"] = None
                line = json.dumps(rec)
                if corrupt == "badjson" and i == bad: line = line[:-9]  # record cut by a partial write
                if corrupt == "emptylist": continue
                f.write(line + "\n")
    if corrupt == "truncnpy":
        fn = os.path.join(d, f"sample_{bad:05d}.npy")
        with open(fn, "r+b") as f: f.truncate(100)
    if corrupt == "missingnpy":
        os.remove(os.path.join(d, f"sample_{bad:05d}.npy"))
    if corrupt == "chmod":
        os.chmod(os.path.join(d, f"sample_{bad:05d}.npy"), 0)

class NpyDataset(Dataset):
    def __init__(self, d, fault, bad_idx, rank):
        self.d = d; self.fault = fault; self.bad_idx = bad_idx; self.rank = rank
        with open(os.path.join(d, "labels.jsonl")) as f:
            self.lines = f.readlines()
    def __len__(self): return len(self.lines)
    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        x = np.load(os.path.join(self.d, rec["file"]))
        if self.fault == "slowworker" and i == self.bad_idx:
            time.sleep(60)  # e.g. NFS stall on this shard
        if self.fault == "native_crash" and i == self.bad_idx:
            # decoder reads through a NULL pointer for this malformed record
            ctypes.string_at(0)
        if self.fault == "varlen":
            x = np.resize(x, 16 + (i % 3 == 0 and i == self.bad_idx) * 3)
        if args.bag:
            # multi-crop sample: a bag of views, each its own tensor
            return [torch.from_numpy(np.asarray(x, dtype=np.float32)) + k for k in range(args.bag)], rec["label"]
        return torch.from_numpy(np.asarray(x, dtype=np.float32)), rec["label"]

def log(msg):
    if args.tslog:
        logging.info(msg)
    else:
        print(msg, flush=True)

def main(local_rank=None, world=None):
    if args.fault == "startmethod":
        import torch.multiprocessing as tmp
        log(f"multiprocessing start method: {tmp.get_start_method()}")
        tmp.set_start_method("spawn")  # workers must not inherit the gloo sockets
    if args.tslog:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
    if local_rank is not None:
        os.environ["RANK"] = str(local_rank); os.environ["WORLD_SIZE"] = str(world)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "46196")
    distributed = "WORLD_SIZE" in os.environ
    rank = 0; ws = 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank = dist.get_rank(); ws = dist.get_world_size()
    torch.manual_seed(0)
    d = args.datadir
    if rank == 0 and args.fault not in ("emptydir",):
        make_data(d, corrupt=args.corrupt, bad=args.bad_idx)
    if distributed: dist.barrier()
    ds = NpyDataset(d, args.fault if rank == args.bad_rank or not distributed else "none", args.bad_idx, rank)
    if args.fault == "sampler_replicas":
        # replica count taken from the launch config of the old 2-process job
        sampler = DistributedSampler(ds, num_replicas=int(os.environ.get("NPROC_CFG", "2")), rank=rank, shuffle=False)
    else:
        sampler = DistributedSampler(ds, shuffle=False) if distributed and not args.no_dist_sampler else None
    dl = DataLoader(ds, batch_size=8, sampler=sampler, shuffle=(sampler is None and not distributed),
                    num_workers=2, timeout=args.dl_timeout, persistent_workers=False,
                    multiprocessing_context=(args.mpctx or None),
                    collate_fn=(lambda b: torch.utils.data.default_collate(b)) if args.mpctx else None)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    log(f"[rank {rank}/{ws}] dataset={len(ds)} samples, batches/epoch={len(dl)}")
    step = 0
    for ep in range(args.epochs):
        if sampler is not None: sampler.set_epoch(ep)
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}")
        tot = 0.0
        for x, y in it:
            if args.bag: x = torch.stack(x).mean(0)
            out = model(x)
            loss = lossf(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item(); step += 1
            if step % 4 == 0 and not args.tqdm:
                log(f"[rank {rank}] epoch {ep} step {step} loss {loss.item():.4f}")
        log(f"[rank {rank}] epoch {ep} done mean_loss {tot/max(1,len(dl)):.4f}")
    if distributed:
        dist.barrier(); dist.destroy_process_group()
    log(f"[rank {rank}] training finished")

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
