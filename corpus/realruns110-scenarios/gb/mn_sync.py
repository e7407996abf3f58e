"""Multi-node synchronisation scenarios (metrics all_reduce, node-local cache + monitored barrier, NaN guard).

Launch either under torchrun (env://) or per node with torch.multiprocessing.spawn:
  python mn_sync.py --spawn --nnodes 2 --node-rank K --nproc 2 --master-port P
Code paths:
  --per-class-metrics   all_reduce a per-class histogram built with torch.bincount(preds) (no minlength)
  --node-cache          each node builds a token-frequency cache in $NODE_ROOT/scratch if missing, then
                        all ranks meet at dist.monitored_barrier
  --nan-guard           abort when the loss is not finite
  --retrieval-eval N    every N steps local rank 0 of each node scores its node-local eval index
                        (size from $NODE_ROOT/scratch/eval_index.json) with a full similarity matrix
  --input-scale         multiply inputs by the per-node feature scale from $NODE_ROOT/scratch/feature_stats.json
"""
import argparse, hashlib, json, math, os, sys, time
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
import mnlib


class Regressor(nn.Module):
    def __init__(self, d=32, tied_init=False):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 64), nn.Tanh(), nn.Linear(64, 8))
        if tied_init:
            # initialise the head from a transposed random projection (keeps it non-contiguous)
            w = torch.randn(64, 8) / 8.0
            self.net[2].weight = nn.Parameter(w.t())

    def forward(self, x):
        return self.net(x)


def build_cache(path, n_docs):
    """Token frequency table over a synthetic corpus (the slow part when the cache is missing)."""
    counts = {}
    for i in range(n_docs):
        h = hashlib.sha256(str(i).encode()).hexdigest()
        for j in range(0, 64, 4):
            tok = h[j:j + 4]
            counts[tok] = counts.get(tok, 0) + 1
    with open(path, "w") as f:
        json.dump(counts, f)
    return counts


def worker(local_rank, args):
    if args.spawn:
        os.environ["RANK"] = str(args.node_rank * args.nproc + local_rank)
        os.environ["WORLD_SIZE"] = str(args.nnodes * args.nproc)
        os.environ["LOCAL_RANK"] = str(local_rank)
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.master_port)
    rank, world, local_rank, log = mnlib.setup(args)
    scratch = os.path.join(mnlib.NODE_ROOT, "scratch")

    if args.node_cache:
        path = os.path.join(scratch, "token_freq.json")
        if local_rank == 0:
            if os.path.exists(path):
                log.info(f"using node-local cache {path}")
            else:
                log.warning(f"node-local cache {path} missing, rebuilding from {args.cache_docs} docs "
                            f"(other ranks will wait at the barrier)")
                t = time.time()
                build_cache(path, args.cache_docs)
                log.info(f"cache rebuilt in {time.time()-t:.1f}s")
        dist.monitored_barrier(timeout=timedelta(seconds=args.barrier_timeout), wait_all_ranks=True)
        log.info("all ranks passed the cache barrier")

    scale = 1.0
    if args.input_scale:
        with open(os.path.join(scratch, "feature_stats.json")) as f:
            stats = json.load(f)
        scale = 1.0 / stats["std"]
        log.info(f"feature std from node stats: {stats['std']}")

    torch.manual_seed(0)
    model = DDP(Regressor(tied_init=args.tied_init))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    t0 = time.time()
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 32, generator=g) * 3.0
        y = (x[:, :8].sum(1) > 0).long() + 2 * (x[:, 8:16].sum(1) > 0).long()
        logits = model(x * scale)
        loss = F.cross_entropy(logits, y)
        if args.nan_guard and not math.isfinite(loss.item()):
            log.info(f"step {step}: loss is {loss.item()}, aborting this run")
            sys.exit(3)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.per_class_metrics and step % 5 == 4:
            preds = logits.argmax(1)
            hist = torch.bincount(preds).float()
            dist.all_reduce(hist)
            if rank == 0:
                log.info(f"step {step} prediction histogram {hist.tolist()}")
        if args.retrieval_eval and (step + 1) % args.retrieval_eval == 0:
            if local_rank == 0:
                with open(os.path.join(scratch, "eval_index.json")) as f:
                    n = json.load(f)["n"]
                with torch.no_grad():
                    emb = F.normalize(model.module.net[0](torch.randn(n, 32, generator=g)), dim=1)
                    sims = emb @ emb.T
                    top1 = sims.fill_diagonal_(-1).argmax(1)
                log.info(f"step {step} retrieval eval on {n} items: mean top1 sim {sims.max(1).values.mean():.3f}")
                del sims
            dist.barrier()
        if step % 5 == 0:
            avg = mnlib.allreduce_mean(loss.item(), world)
            if rank == 0:
                log.info(f"step {step} loss {avg:.4f} ({time.time()-t0:.1f}s)")
        time.sleep(args.sleep)
    dist.barrier()
    if rank == 0:
        log.info(f"finished {args.steps} steps")
    dist.destroy_process_group()


def main():
    p = mnlib.base_parser()
    p.add_argument("--spawn", action="store_true")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--master-port", type=int, default=44090)
    p.add_argument("--per-class-metrics", action="store_true")
    p.add_argument("--node-cache", action="store_true")
    p.add_argument("--cache-docs", type=int, default=200000)
    p.add_argument("--barrier-timeout", type=int, default=15)
    p.add_argument("--nan-guard", action="store_true")
    p.add_argument("--tied-init", action="store_true")
    p.add_argument("--retrieval-eval", type=int, default=0)
    p.add_argument("--input-scale", action="store_true")
    args = p.parse_args()
    if args.spawn:
        mp.spawn(worker, args=(args,), nprocs=args.nproc, join=True)
    else:
        worker(int(os.environ.get("LOCAL_RANK", 0)), args)


if __name__ == "__main__":
    main()
