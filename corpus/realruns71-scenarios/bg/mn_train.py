"""Small DDP trainer used for multi-node (several torchrun agents on localhost) scenarios.

Flags select an optional fault, the global rank it hits and the step.
"""
import argparse, logging, math, os, socket, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--data-root", default="/work/rr71/bg/tmp/data")
p.add_argument("--ckpt-dir", default="")
p.add_argument("--resume", default="")
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--run-name", default="mn")
p.add_argument("--legacy-save", action="store_true")
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noise", action="store_true")
p.add_argument("--barrier-every", type=int, default=0)
p.add_argument("--stall-file", default="/work/rr71/bg/tmp/stall.fifo")
p.add_argument("--sleep", type=float, default=0.05)
args = p.parse_args()

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
local_rank = int(os.environ.get("LOCAL_RANK", 0))
group_rank = int(os.environ.get("GROUP_RANK", 0))

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("trainer").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

torch.manual_seed(1234)
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
log(f"initialized process group: rank {rank}/{world} local_rank {local_rank} group_rank {group_rank} host {socket.gethostname()}")


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, aux_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, hidden * 2), nn.GELU(), nn.Linear(hidden * 2, hidden))
        self.head = nn.Linear(hidden, vocab)
        self.aux = nn.Linear(hidden, 4) if aux_head else None

    def forward(self, ids, use_aux=False):
        h = self.emb(ids)
        h = h + self.ff(h)
        out = self.head(h)
        if use_aux and self.aux is not None:
            return out, self.aux(h.mean(1))
        return out


def make_shard(path, n, vocab, seq=12, fmt="v2", poison=None):
    g = torch.Generator().manual_seed(hash(path) % 1000)
    ids = torch.randint(0, vocab, (n, seq), generator=g)
    if fmt == "v2":
        obj = {"input_ids": ids, "labels": torch.roll(ids, -1, 1), "cls": torch.randint(0, 4, (n,), generator=g)}
    else:  # older preprocessing output
        obj = {"input": ids, "label": torch.roll(ids, -1, 1), "cls": torch.randint(0, 4, (n,), generator=g)}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(obj, path)


# ---- data: each node reads its shard from its node-local data dir ----
node_dir = os.path.join(args.data_root, f"node{group_rank}")
shard_path = os.path.join(node_dir, f"shard_{local_rank}.pt")
if args.fault == "missing-shard" and rank == args.fault_rank:
    node_dir = os.path.join(args.data_root, f"node{group_rank}-scratch")  # per-node path from env that was never staged
    shard_path = os.path.join(node_dir, f"shard_{local_rank}.pt")
elif not os.path.exists(shard_path) or args.fault in ("old-format", "vocab-shard"):
    fmt = "v1" if (args.fault == "old-format" and rank == args.fault_rank) else "v2"
    vocab = args.vocab + 300 if (args.fault == "vocab-shard" and rank == args.fault_rank) else args.vocab
    if args.fault in ("old-format", "vocab-shard"):
        shard_path = shard_path.replace(".pt", f"_{args.fault}.pt")
    make_shard(shard_path, 2000, vocab, fmt=fmt)
data = torch.load(shard_path)
log(f"loaded {shard_path} ({len(next(iter(data.values())))} samples)")

hidden = args.hidden
if args.fault == "hidden-env" and rank == args.fault_rank:
    hidden = int(os.environ.get("MODEL_HIDDEN", args.hidden))
model = TinyLM(args.vocab, hidden, aux_head=(args.fault == "unused-aux"))
ddp = DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
start_step = 0

if args.resume:
    ck = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    start_step = ck["step"]
    log(f"resumed from {args.resume} at step {start_step}")

if args.noise:
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)
    if rank == 0:
        warnings.warn("Grad strides do not match bucket view strides. This may indicate grad was not created according to the gradient layout contract, or that the param's strides changed since DDP was constructed.  This is not an error, but may impair performance.", UserWarning)

it = range(start_step, args.steps)
if args.log_style == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)

n = len(next(iter(data.values())))
t0 = time.time()
for step in it:
    i = (step * args.bs) % (n - args.bs)
    batch = {k: v[i:i + args.bs] for k, v in data.items()}
    if args.fault == "nan-shard" and rank == args.fault_rank and step == args.fault_step:
        # corrupted record: this node's feature-scaling stats were computed on an empty slice -> 0/0
        scale = batch["labels"].float().sum() * 0 / torch.tensor(0.0)
    else:
        scale = torch.tensor(1.0)
    if args.fault == "stall" and rank == args.fault_rank and step == args.fault_step:
        # reading the next batch from a hung mount: the read never returns
        with open(args.stall_file) as f:
            f.read()
    ids, labels = batch["input_ids"], batch["labels"]
    use_aux = args.fault == "unused-aux" and step % 2 == 0 and False
    logits = ddp(ids, use_aux=use_aux)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1)) * scale
    if not math.isfinite(loss.item()):
        raise RuntimeError(f"Loss is {loss.item()}, stopping training (step {step})")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

    # per-class accuracy statistics, reduced across ranks
    if args.fault == "class-stats":
        classes_seen = torch.unique(batch["cls"] if not (rank == args.fault_rank and step == args.fault_step) else batch["cls"].clamp(max=2))
        counts = torch.stack([(batch["cls"] == c).sum() for c in classes_seen]).float()
        dist.all_reduce(counts)
    lt = loss.detach().clone()
    dist.all_reduce(lt)
    lt /= world
    if args.fault == "huge-buffer" and rank == args.fault_rank and step == args.fault_step:
        # gradient-statistics buffer sized with vocab**2 * hidden**2 instead of vocab*hidden
        stats = torch.zeros(args.vocab ** 2 * hidden ** 2 * 64)
    if args.save_every and (step + 1) % args.save_every == 0 and local_rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        fn = os.path.join(args.ckpt_dir, f"{args.run_name}_node{group_rank}_step{step+1}.pt")
        ck = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}
        if args.legacy_save:
            with open(fn, "wb") as fh:
                torch.save(ck, fh, _use_new_zipfile_serialization=False)
        else:
            torch.save(ck, fn)
        log(f"saved checkpoint {fn}")
    if args.barrier_every and (step + 1) % args.barrier_every == 0:
        # make sure every rank reached the eval point before evaluating
        dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
        if rank == 0:
            log(f"eval checkpoint reached at step {step+1}, all ranks present")
    if step % 5 == 0 or step == args.steps - 1:
        msg = f"step {step:4d} | loss {lt.item():.4f} | lr {args.lr:.1e} | {(time.time()-t0)/(step-start_step+1):.3f}s/it"
        if args.log_style == "tqdm" and rank == 0:
            it.write(f"[rank0] {msg}")
        elif args.log_style != "tqdm" or rank == 0:
            log(msg)
    time.sleep(args.sleep)

dist.barrier()
log(f"training done: {args.steps} steps")
dist.destroy_process_group()
