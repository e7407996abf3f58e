"""DDP training of a small MLP classifier with an auxiliary head, rank-0 evaluation and
metric gathering. --fault selects a rank-dependent bug; launched by torchrun or mp.spawn."""
import argparse, os, sys, time, glob, warnings, logging
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler
import torch.utils.checkpoint as ckpt

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--join", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use mp.spawn with this many procs")
p.add_argument("--port", default="31760")
p.add_argument("--eval-dir", default="/work/rr70/be/data/eval_shards")
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, hidden, use_ckpt=False):
        super().__init__()
        self.embed = nn.Linear(20, hidden)
        self.block = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 5)
        self.aux_head = nn.Linear(hidden, 1)
        self.use_ckpt = use_ckpt

    def forward(self, x, with_aux=True):
        h = torch.relu(self.embed(x))
        if self.use_ckpt:
            h = ckpt.checkpoint(self.block, h, use_reentrant=True) + ckpt.checkpoint(self.block, h, use_reentrant=True)
        else:
            h = h + self.block(h)
        out = self.head(h)
        if with_aux:
            return out, self.aux_head(h).squeeze(-1)
        return out, None


def init_dist(rank, world):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))


def worker(rank, world):
    if args.fault == "late_init" and rank == args.fault_rank:
        import fcntl
        print(f"[rank{rank}] waiting for dataset cache lock {args.eval_dir}/.cache.lock", flush=True)
        fh = open(os.path.join(args.eval_dir, ".cache.lock"), "w")
        fcntl.flock(fh, fcntl.LOCK_EX)
    init_dist(rank, world)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)

    hidden = args.hidden
    if args.fault == "model_mismatch" and rank == args.fault_rank:
        # this node's launch script still exported the old width
        hidden = int(os.environ.get("RR_HIDDEN_OLD", "48"))
    model = Net(hidden, use_ckpt=(args.fault == "ckpt_twice"))
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

    g = torch.Generator().manual_seed(7)
    n = 480
    X = torch.randn(n, 20, generator=g)
    Y = torch.randint(0, 5, (n,), generator=g)
    A = torch.randn(n, generator=g)
    ds = TensorDataset(X, Y, A)
    if args.join:
        # uneven split on purpose: each rank gets a contiguous slice of different length
        sizes = [n // world + 16 * r for r in range(world)]
        start = sum(sizes[:rank])
        ds = torch.utils.data.Subset(ds, range(start, min(n, start + sizes[rank])))
        sampler = None
    else:
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=False)
    ce, mse = nn.CrossEntropyLoss(), nn.MSELoss()

    step = 0
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {epoch}", dynamic_ncols=False, ncols=90)
        ctx = None
        if args.join:
            from torch.distributed.algorithms.join import Join
            ctx = Join([ddp])
            ctx.__enter__()
        for xb, yb, ab in it:
            # aux targets only exist for the labelled part of the corpus; rank 1's shard has none
            with_aux = True
            if args.fault == "aux_branch" and rank == args.fault_rank and step >= args.fault_step:
                with_aux = False
            out, aux = ddp(xb, with_aux=with_aux)
            loss = ce(out, yb)
            if aux is not None:
                loss = loss + 0.1 * mse(aux, ab)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0 and not (args.tqdm and rank == 0):
                print(f"[rank{rank}] epoch={epoch} step={step} loss={loss.item():.4f}", flush=True)
            step += 1
        if ctx is not None:
            ctx.__exit__(None, None, None)
        # ---- end of epoch: evaluation on rank 0 only, then sync
        if rank == 0:
            evaluate(ddp.module, epoch)
        if args.fault == "destroy_early" and rank == args.fault_rank and epoch == 0:
            # refactor moved cleanup into the epoch loop
            dist.destroy_process_group()
        dist.barrier()
        acc = torch.tensor([float(step)])
        dist.all_reduce(acc)
        if rank == 0:
            print(f"epoch {epoch} done, total steps over ranks {int(acc.item())}", flush=True)
    dist.destroy_process_group()


def evaluate(model, epoch):
    if args.fault == "init_twice":
        # eval helper written for standalone use sets up its own process group
        init_dist(0, int(os.environ.get("WORLD_SIZE", args.spawn or 1)))
    model.eval()
    with torch.no_grad():
        if args.fault == "eval_fds":
            # stream every eval shard; handles kept for the per-shard report
            handles = []
            total = 0
            for f in sorted(glob.glob(os.path.join(args.eval_dir, "*.txt"))):
                fh = open(f)
                handles.append(fh)
                total += len(fh.readline())
            print(f"[rank0] eval epoch {epoch}: read {len(handles)} shards", flush=True)
        if args.fault == "eval_alloc":
            # gather logits for the full eval corpus for calibration plots
            n_eval = int(os.environ.get("RR_EVAL_SAMPLES", "200000000"))
            logits = torch.empty(n_eval, 5)
            print(f"[rank0] eval logits buffer {tuple(logits.shape)}", flush=True)
        if args.fault == "eval_heavy":
            # nearest-neighbour retrieval eval over the embedding bank
            bank = torch.randn(4096, 1024)
            q = torch.randn(1024, 1024)
            for i in range(int(os.environ.get("RR_EVAL_ROUNDS", "200"))):
                sims = q @ bank.T
                top = sims.topk(5, dim=1).indices
                if i % 20 == 0:
                    print(f"[rank0] retrieval eval chunk {i}", flush=True)
        x = torch.randn(64, 20)
        out, _ = model(x)
        print(f"[rank0] eval epoch {epoch}: mean max-prob {out.softmax(-1).max(-1).values.mean():.3f}", flush=True)
    model.train()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
