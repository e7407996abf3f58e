"""PyTorch DDP (gloo, CPU) training whose data features are computed with JAX on each rank.

Launch with torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
--init-from FILE   .npz of weights exported from the Flax prototype (keys fc1/kernel ...)
--shard-manifest   rank r trains on files listed for it; --empty-rank R gets an empty list (stale manifest)
--workers N        DataLoader workers (fork)
"""
import argparse
import os
import sys
import time
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=40080)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--init-from", default=None)
p.add_argument("--export-flax", default=None, help="write a Flax-style npz and exit")
p.add_argument("--empty-rank", type=int, default=-1)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--amp", action="store_true", help="legacy torch.cuda.amp scaler from the GPU config")
p.add_argument("--log-info", action="store_true")
args = p.parse_args()

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class JaxFeatureDS(Dataset):
    def __init__(self, n, seed):
        import jax
        import jax.numpy as jnp
        key = jax.random.PRNGKey(seed)
        raw = jax.random.normal(key, (n, 16))
        feats = jnp.concatenate([raw, jnp.sin(raw)], -1)  # feature engineering in JAX
        self.x = np.asarray(feats)
        self.y = (self.x[:, :10] * 2).argmax(-1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


def worker(rank, world):
    if args.log_info:
        import logging
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    if args.spawn:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=40))
    torch.manual_seed(0)
    model = Net()
    if args.init_from:
        sd = dict(np.load(args.init_from))
        # flax naming -> torch naming
        conv = {}
        for k, v in sd.items():
            mod, leaf = k.split("/")
            conv[f"{mod}.{'weight' if leaf == 'kernel' else 'bias'}"] = torch.from_numpy(v)
        model.load_state_dict(conv)
        print(f"[rank{rank}] initialised from {args.init_from}", flush=True)
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    scaler = torch.cuda.amp.GradScaler() if args.amp else None
    n = 0 if rank == args.empty_rank else 640
    ds = JaxFeatureDS(n, seed=rank)
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=args.workers)
    print(f"[rank{rank}] {len(ds)} samples, {len(dl)} batches/epoch", flush=True)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()
    for ep in range(args.epochs):
        tot, cnt = 0.0, 0
        for i, (x, y) in enumerate(dl):
            opt.zero_grad()
            loss = lossf(ddp(x), y)
            loss.backward()
            opt.step()
            tot += loss.item(); cnt += 1
            if i % 10 == 0:
                print(f"[rank{rank}] epoch {ep} it {i} loss {loss.item():.4f}", flush=True)
        m = torch.tensor([tot, float(cnt)])
        dist.all_reduce(m)
        if rank == 0:
            print(f"epoch {ep} mean loss {m[0].item()/max(m[1].item(),1):.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.export_flax:
        import jax, jax.numpy as jnp, flax.linen as fnn

        class FNet(fnn.Module):
            @fnn.compact
            def __call__(self, x):
                x = fnn.relu(fnn.Dense(64, name="fc1")(x))
                x = fnn.relu(fnn.Dense(64, name="fc2")(x))
                return fnn.Dense(10, name="head")(x)
        params = FNet().init(jax.random.PRNGKey(0), jnp.zeros((1, 32)))["params"]
        flat = {f"{m}/{l}": np.asarray(v) for m, d in params.items() for l, v in d.items()}
        np.savez(args.export_flax, **flat)
        print(f"exported {len(flat)} arrays to {args.export_flax}: " + ", ".join(f"{k}{v.shape}" for k, v in flat.items()))
        sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
