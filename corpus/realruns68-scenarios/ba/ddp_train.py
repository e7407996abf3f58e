"""Small DDP regression trainer on per-rank data shards (gloo, CPU).

--fault selects a fault injected the way it happens in practice, on --fault-rank at --fault-step.
"""
import argparse, datetime, json, logging, os, sys, time, warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--data-dir", default="/work/rr68/ba/data")
p.add_argument("--out-dir", default="/work/rr68/ba/out")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--noisy", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=31510)
args = p.parse_args()

FEAT = 16


class ShardDataset(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(l) for l in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["x"], dtype=torch.float32), torch.tensor([r["label"]], dtype=torch.float32)


def make_shards(world, fault, fault_rank):
    os.makedirs(args.data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for r in range(world):
        path = os.path.join(args.data_dir, f"shard_{r:05d}.jsonl")
        feat = FEAT
        if fault == "shape" and r == fault_rank:
            feat = FEAT + 4  # this shard was exported with a newer feature schema
        with open(path, "w") as f:
            for i in range(256):
                x = torch.randn(feat, generator=g).tolist()
                row = {"x": x, "label": sum(x[:4])}
                if fault == "keyerror" and r == fault_rank and i == 37:
                    row = {"x": x, "target": sum(x[:4])}  # record from the old exporter
                if fault == "nan" and r == fault_rank and i >= 40:
                    row["x"][3] = 1e38 * (i % 7 + 1)  # overflowed sensor values in this shard
                f.write(json.dumps(row) + "\n")
        if fault == "missing" and r == fault_rank:
            os.remove(path)  # shard never got synced to this node


def get_logger(rank):
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        lg = logging.getLogger("trainer")
        return lg.info, lg.warning
    pre = f"[rank {rank}] "
    return (lambda m: print(pre + m, flush=True)), (lambda m: print(pre + "WARNING: " + m, flush=True))


def worker(local_rank=None, world_from_spawn=None):
    if world_from_spawn is not None:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank),
                          WORLD_SIZE=str(world_from_spawn), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(args.port))
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    info, warn = get_logger(rank)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    info(f"initialized process group: backend=gloo world_size={world}")

    if args.fault == "noimport" and rank == args.fault_rank:
        # only the logging rank sets up TensorBoard
        from torch.utils.tensorboard import SummaryWriter
        tb = SummaryWriter(args.out_dir)

    device = torch.device("cpu")
    if args.fault == "cuda" and rank == args.fault_rank:
        device = torch.device(f"cuda:{rank}")  # copied from the GPU launch script
    if args.fault == "memlimit" and rank == args.fault_rank:
        import resource
        lim = 1536 * 1024 * 1024  # per-process address-space limit of this slot
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        info(f"address space limit {lim >> 20} MiB")

    if rank == 0:
        make_shards(world, args.fault, args.fault_rank)
    dist.barrier()

    ds = ShardDataset(os.path.join(args.data_dir, f"shard_{rank:05d}.jsonl"))
    dl = DataLoader(ds, batch_size=16, shuffle=False, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(FEAT, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.noisy:
        sched = torch.optim.lr_scheduler.StepLR(opt, 4)
        sched.step()  # warm-start the schedule (emits ordering warning)
        warnings.warn("This DataLoader will create 4 worker processes in total. Our suggested max number of worker in current system is 2", UserWarning)
        warn("grad norm 183.4 exceeds clip threshold 1.0; clipping")

    it = iter(dl)
    rng = range(args.steps)
    if args.style == "tqdm":
        from tqdm import tqdm
        rng = tqdm(rng, desc=f"rank{rank} train", file=sys.stderr, mininterval=0, ascii=True)
    for step in rng:
        if args.fault == "stall" and rank == args.fault_rank and step == args.fault_step:
            info("saving async snapshot to /mnt/nfs/snapshots ...")
            time.sleep(args.pg_timeout * 3)  # NFS write hangs
        if args.fault == "kill" and rank == args.fault_rank and step == args.fault_step:
            with open(os.path.join(args.out_dir, "victim.pid"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(30)
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl); x, y = next(it)
        x, y = x.to(device), y.to(device)
        if args.fault == "memlimit" and rank == args.fault_rank and step == args.fault_step:
            # feature-cache of the full epoch, materialised at once
            cache = torch.empty(len(ds) * 1024 * 1024, dtype=torch.float32)
        if args.fault == "cache" and rank == args.fault_rank and step == args.fault_step:
            # this rank also owns the eval set: its embedding cache is 3x larger
            info(f"building eval embedding cache for {len(ds) * 3} x 1M features")
            cache = torch.zeros(len(ds) * 3 * 1024 * 1024, dtype=torch.float32)
        if args.fault == "mismatch" and rank == args.fault_rank and step == args.fault_step:
            stats = torch.zeros(3)  # this rank tracks an extra metric
        else:
            stats = torch.zeros(2)
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"Loss became infinite or NaN at iteration={step}! loss={loss.item()}")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.fault in ("mismatch", "mbarrier") or args.noisy:
            stats[0] = loss.item(); stats[1] = x.shape[0]
            dist.all_reduce(stats)
        if args.fault == "mbarrier":
            if rank == args.fault_rank and step == args.fault_step:
                time.sleep(args.pg_timeout * 3)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=8))
        if args.style != "tqdm" or step % 4 == 0:
            info(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.4g}")
    if rank == 0:
        os.makedirs(args.out_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.out_dir, "final.pt"))
        info("saved checkpoint " + os.path.join(args.out_dir, "final.pt"))
    dist.barrier()
    dist.destroy_process_group()
    info("done")


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn)
    else:
        worker()
