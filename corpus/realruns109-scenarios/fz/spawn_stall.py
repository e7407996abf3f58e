"""torch.multiprocessing.spawn trainer; rank 0 prepares a shard index file, the other ranks wait for it.

--fault wrong-path : rank 0 writes the "ready" marker relative to its own output dir while the other ranks
                     poll the path under the data dir (path bug) -> rank 1 polls forever, rank 0 waits in the
                     first collective until the process-group timeout.
"""
import argparse, os, time, json
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--port", type=int, default=43830)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--data-dir", default="/tmp/fz_spawn_data")
p.add_argument("--out-dir", default="/tmp/fz_spawn_out")
args = p.parse_args()


def worker(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    torch.set_num_threads(1)
    marker = os.path.join(args.data_dir, "index.ready")
    if rank == 0:
        os.makedirs(args.data_dir, exist_ok=True)
        os.makedirs(args.out_dir, exist_ok=True)
        json.dump({"shards": [f"shard{i:03d}" for i in range(8)]}, open(os.path.join(args.data_dir, "index.json"), "w"))
        ready = os.path.join(args.out_dir if args.fault == "wrong-path" else args.data_dir, "index.ready")
        open(ready, "w").close()
        print(f"[rank0] wrote shard index, marker {ready}", flush=True)
    else:
        waited = 0
        while not os.path.exists(marker):
            time.sleep(1)
            waited += 1
            if waited % 10 == 0:
                print(f"[rank{rank}] still waiting for {marker} ({waited}s)", flush=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    X = torch.randn(256, 8); Y = X.sum(1, keepdim=True)
    for step in range(30):
        loss = nn.functional.mse_loss(model(X), Y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    import shutil
    for d in (args.data_dir, args.out_dir):
        shutil.rmtree(d, ignore_errors=True)
    mp.spawn(worker, args=(2,), nprocs=2)
