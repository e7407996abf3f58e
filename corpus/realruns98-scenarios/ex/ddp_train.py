"""Small DDP trainer (gloo/CPU) used to reproduce process- and cluster-side failures.

Flags pick the fault, the rank and the step.  All faults are ordinary bugs or resource
limits; nothing raises a hand-made exception.
"""
import argparse, datetime, logging, os, resource, signal, socket, sys, time, warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--hidden", type=int, default=128)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--pg-timeout", type=float, default=30)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--log-file", default=None)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--ckpt-dir", default="/work/rr98/ex/tmp/ckpt")
p.add_argument("--data-dir", default="/work/rr98/ex/tmp/data")
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--eval-size", type=int, default=2000)
p.add_argument("--cgroup", default=None, help="memory cgroup the faulty rank runs in")
p.add_argument("--sync", default="none", help="extra per-step sync: none|monitored")
p.add_argument("--noisy", action="store_true", help="emit the usual start-up warnings")
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
host = socket.gethostname()

fmt = f"%(asctime)s {host} [rank{rank}] %(levelname)s %(name)s: %(message)s"
handlers = [logging.StreamHandler(sys.stdout)]
if args.log_file:
    os.makedirs(os.path.dirname(args.log_file), exist_ok=True)
    handlers.append(logging.FileHandler(args.log_file.replace("{rank}", str(rank))))
logging.basicConfig(level=logging.INFO, format=fmt, handlers=handlers, force=True)
log = logging.getLogger("train")

torch.manual_seed(0)
torch.set_num_threads(1)


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return -1


class ShardDataset(Dataset):
    """Synthetic regression data; optionally read from per-shard files."""

    def __init__(self, n, dim, files=None):
        g = torch.Generator().manual_seed(1234)
        self.x = torch.randn(n, dim, generator=g)
        w = torch.randn(dim, 1, generator=g)
        self.y = self.x @ w + 0.1 * torch.randn(n, 1, generator=g)
        self.files = files
        self.cache_decoded = False
        self.cache = {}

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.cache_decoded:
            # "decode" once and memoise (each worker keeps its own copy)
            if i not in self.cache:
                self.cache[i] = torch.randn(256, 1024)
        if self.files is not None:
            # each sample carries a small "augmentation" table from its shard file
            fh = open(self.files[i % len(self.files)], "rb")
            _ = fh.read(16)
            self._open.append(fh)  # bug: handle kept for "reuse", never closed
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, 1)
        self.feature_cache = []

    def forward(self, x):
        h = self.body(x)
        return self.head(h), h


def setup():
    if args.fault == "reinit_pg" and rank == args.fault_rank:
        pass
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))


def main():
    if args.noisy:
        base = torch.ones(4)
        _ = torch.tensor(base)
    if args.cgroup and rank == args.fault_rank:
        # the launcher wrapper places this rank in a limited cgroup (like a container limit)
        with open(os.path.join(args.cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        if os.path.exists(os.path.join(args.cgroup, "memory.limit_in_bytes")):
            log.info("joined cgroup %s (limit %s MB)", args.cgroup,
                     int(open(os.path.join(args.cgroup, "memory.limit_in_bytes")).read()) // 2**20)
        else:
            log.info("joined cgroup %s (pids.max %s)", args.cgroup, open(os.path.join(args.cgroup, "pids.max")).read().strip())
    setup()
    log.info("process group ready: backend=%s world_size=%d local_rank=%d pid=%d", dist.get_backend(), world, local_rank, os.getpid())

    if args.fault == "reinit_pg" and rank == args.fault_rank:
        # helper from an "eval utils" module that initialises distributed on its own
        from datetime import timedelta
        def init_eval_distributed():
            dist.init_process_group(backend="gloo", init_method="env://", timeout=timedelta(seconds=args.pg_timeout))
        init_eval_distributed()

    dim = 32
    n = 4096
    files = None
    if args.fault == "fdleak":
        os.makedirs(args.data_dir, exist_ok=True)
        files = []
        for k in range(64):
            fp = os.path.join(args.data_dir, f"shard_{k:03d}.bin")
            if not os.path.exists(fp):
                with open(fp, "wb") as f:
                    f.write(os.urandom(64))
            files.append(fp)
    ds = ShardDataset(n, dim, files)
    ds._open = []
    if args.fault == "worker_cache_leak" and rank == args.fault_rank:
        ds.cache_decoded = True
    if args.fault == "uneven":
        # each rank reads its own pre-split shard; the last shard is shorter
        per = n // world
        lo = rank * per
        hi = lo + (per if rank != args.fault_rank else per // 3)
        ds.x, ds.y = ds.x[lo:hi], ds.y[lo:hi]
        sampler = None
        log.info("local shard rows %d..%d (%d samples)", lo, hi, hi - lo)
    else:
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=False, num_workers=args.workers,
                    persistent_workers=args.workers > 0)

    model = Net(dim, args.hidden)
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(args.steps, 1))
    if args.noisy and rank == 0:
        sched.step()

    if args.fault == "hang" and rank == args.fault_rank:
        fifo = "/work/rr98/ex/tmp/ready.fifo"
        if not os.path.exists(fifo):
            os.mkfifo(fifo)

    sigterm_seen = {"v": False}
    if args.fault == "slow_ckpt_on_term":
        def on_term(signum, frame):
            log.warning("caught signal %d, writing emergency checkpoint before exit", signum)
            sigterm_seen["v"] = True
        signal.signal(signal.SIGTERM, on_term)

    step = 0
    it = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100, file=sys.stderr)
    t0 = time.time()
    done = False
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in dl:
            if step >= args.steps:
                done = True
                break
            faulty = rank == args.fault_rank and step == args.fault_step

            if faulty and args.fault == "hang":
                # waits for a "data ready" marker that the (absent) preprocessing job should write
                log.info("waiting for preprocessing signal on %s", fifo)
                with open(fifo, "rb") as f:
                    f.read(1)
            if faulty and args.fault == "segv":
                import ctypes
                # custom augmentation via ctypes on a buffer that was already released
                scratch = torch.empty(0)  # resized away earlier; storage is gone
                ptr = scratch.data_ptr()
                ctypes.string_at(ptr + 8, 64)
            if faulty and args.fault == "bad_path":
                log.info("loading vocab for rank-local eval")
                open(os.path.join(args.data_dir, "vocab", f"rank{rank}.json")).read()

            if args.sync == "monitored":
                # make sure every rank has its batch before the forward pass
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
            out, h = ddp(xb)
            loss = nn.functional.mse_loss(out, yb)
            if args.fault == "leak" and rank == args.fault_rank:
                # keeps full-resolution features for a later t-SNE plot
                model.feature_cache.append(torch.randn(xb.shape[0] * 256, args.hidden * 16) + h.detach().mean())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()

            if args.fault == "skip_barrier" and step == args.fault_step:
                if rank == 0:
                    # save checkpoint and let other ranks wait for it
                    os.makedirs(args.ckpt_dir, exist_ok=True)
                    torch.save(model.state_dict(), os.path.join(args.ckpt_dir, f"step{step}.pt"))
                    dist.barrier()
            reduced = loss.detach().clone()
            dist.all_reduce(reduced)
            reduced /= world

            if args.eval_every and (step + 1) % args.eval_every == 0 and rank == 0:
                # retrieval-style eval: full pairwise similarity between eval embeddings
                with torch.no_grad():
                    e = torch.randn(args.eval_size, args.hidden)
                    sim = e @ e.T
                    top = sim.topk(5, dim=1).indices
                log.info("eval@%d recall proxy=%.3f", step + 1, (top[:, 0] == torch.arange(len(top))).float().mean().item())

            if it is not None:
                it.update(1)
                it.set_postfix(loss=f"{reduced.item():.4f}")
            if step % 5 == 0:
                log.info("epoch %d step %d loss %.4f lr %.2e rss %dMB %.1fs", epoch, step, reduced.item(),
                         sched.get_last_lr()[0], rss_mb(), time.time() - t0)
            if sigterm_seen["v"]:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                for k in range(45):
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                               os.path.join(args.ckpt_dir, f"emergency_rank{rank}.pt"))
                    time.sleep(1.0)  # slow network filesystem
                log.info("emergency checkpoint written")
                sys.exit(0)
            step += 1
            time.sleep(args.step_sleep)
        if done:
            break
    if it is not None:
        it.close()
    if args.fault == "uneven" and rank == args.fault_rank:
        log.info("rank %d finished its shard after %d steps", rank, step)
    log.info("training done: %d steps in %.1fs", step, time.time() - t0)
    if rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.ckpt_dir, "final.pt"))
        log.info("saved %s", os.path.join(args.ckpt_dir, "final.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
