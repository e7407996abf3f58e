"""Multi-node DDP trainer (tiny token+feature classifier), gloo/CPU.

Each rank reads its own data shard  $DATA_DIR/shard_{RANK}.jsonl  (written by mn_prep.py),
trains a few steps, all-reduces metrics, and the local rank 0 of each node writes a node-local
checkpoint to $CKPT_DIR.  Faults are selected with --fault and fire only on --fault-rank at
--fault-step; most of them are real misconfigurations that come from the node's environment
(DATA_DIR, CKPT_DIR, ulimits, --hidden, --backend ...), the flag only selects the code path.
"""
import argparse, json, logging, os, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--backend", default="gloo")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--log-style", default="print", choices=["print", "logging"])
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true", help="print healthy-but-alarming warnings")
p.add_argument("--resume", default="")
p.add_argument("--eval-batch", type=int, default=64)
p.add_argument("--sleep", type=float, default=0.3)
p.add_argument("--aux-head", action="store_true")
p.add_argument("--mesh", default="")
args = p.parse_args()

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
    _old = logging.getLogRecordFactory()
    def _f(*a, **k):
        r = _old(*a, **k); r.rank = os.environ.get("RANK", "?"); return r
    logging.setLogRecordFactory(_f)
    log = logging.getLogger("mn_train").info
else:
    def log(msg):
        print(f"[rank{os.environ.get('RANK','?')}] {msg}", flush=True)

dist.init_process_group(args.backend, timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ.get("LOCAL_RANK", 0))
node = int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", 0)))
host = os.environ.get("HOSTNAME_SIM", f"node{node}")
is_fault = rank == args.fault_rank
torch.manual_seed(0)

run_dir = os.environ.get("RUN_DIR", "/tmp")
os.makedirs(os.path.join(run_dir, "pids"), exist_ok=True)
with open(os.path.join(run_dir, "pids", f"rank{rank}.pid"), "w") as f:
    f.write(str(os.getpid()))

log(f"host={host} local_rank={local_rank} world_size={world} backend={dist.get_backend()} pid={os.getpid()}")

if args.mesh:
    from torch.distributed.device_mesh import init_device_mesh
    dims = tuple(int(x) for x in args.mesh.split("x"))
    mesh = init_device_mesh("cpu", dims, mesh_dim_names=("dp_shard", "dp_rep")[: len(dims)])
    log(f"device mesh {mesh}")

if args.noise:
    import numpy as np
    # class weights read straight from a bytes buffer
    class_w = torch.as_tensor(np.frombuffer(np.array([1.0, 1.0, 1.0], dtype=np.float32).tobytes(), dtype=np.float32))


# ---------------------------------------------------------------- data
data_dir = os.environ.get("DATA_DIR", os.path.join(run_dir, "data"))
shard = os.path.join(data_dir, f"shard_{rank}.jsonl")
log(f"loading shard {shard}")
open_handles = []
def load_records(path):
    recs = []
    with open(path) as f:
        for line in f:
            recs.append(json.loads(line))
    return recs
records = load_records(shard)
log(f"{len(records)} records")


class Net(nn.Module):
    def __init__(self, vocab, hidden, aux):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.feat = nn.Linear(4, hidden)
        self.body = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 3)
        self.aux = nn.Linear(hidden, 2) if aux else None

    def forward(self, tok, feats, aux_target=None):
        h = self.emb(tok).mean(1) + self.feat(feats)
        h = self.body(h)
        out = self.head(h)
        aux_loss = None
        if self.aux is not None and aux_target is not None:
            aux_loss = F.cross_entropy(self.aux(h), aux_target)
        return out, aux_loss


model = Net(args.vocab, args.hidden, args.aux_head)
if args.resume:
    log(f"resuming from {args.resume}")
    sd = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(sd["model"])
ddp = DDP(model, find_unused_parameters=args.noise)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
if args.noise:
    sched.step()  # warm-start the schedule


def get_batch(step, bs=8):
    recs = [records[(step * bs + i) % len(records)] for i in range(bs)]
    if args.fault == "nofile" and is_fault:
        # per-sample side files opened for the 'lazy feature cache' and never closed (leak)
        for r in recs:
            open_handles.append(open(os.path.join(data_dir, "cache", f"{r['id'] % 50}.bin"), "rb"))
    tok = torch.tensor([r["tokens"] for r in recs])
    feats = torch.tensor([r["feats"] for r in recs], dtype=torch.float32)
    label = torch.tensor([r["label"] for r in recs])
    aux = None
    if args.aux_head and all("aux" in r for r in recs):
        aux = torch.tensor([r["aux"] for r in recs])
    return tok, feats, label, aux


it = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"{host} rank{rank}", disable=local_rank != 0, mininterval=0, ncols=90)

for step in it:
    if args.fault in ("fifo-hang", "fifo-monitored", "fifo-barrier") and is_fault and step == args.fault_step:
        # node-local prefetch reads the next shard from DATA_DIR/next_shard (on this node a FIFO left by a dead job)
        log(f"prefetching {os.path.join(data_dir, 'next_shard')}")
        with open(os.path.join(data_dir, "next_shard")) as f:
            f.read()
    if args.fault == "fifo-barrier" and step == args.fault_step:
        log("syncing ranks before epoch-boundary shard switch (monitored_barrier)")
        dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)
    tok, feats, label, aux = get_batch(step)
    out, aux_loss = ddp(tok, feats, aux)
    loss = F.cross_entropy(out, label)
    if aux_loss is not None:
        loss = loss + 0.1 * aux_loss
    if not torch.isfinite(loss):
        log(f"Loss is {loss.item()}, stopping training")
        sys.exit(1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    acc = (out.argmax(-1) == label).float().mean()
    metrics = torch.stack([loss.detach(), acc])
    if args.fault == "extra-metric" and is_fault and step >= args.fault_step:
        metrics = torch.cat([metrics, torch.tensor([opt.param_groups[0]["lr"]])])
    if args.fault == "fifo-monitored" and step == args.fault_step + 1:
        log("waiting for all ranks before eval (monitored_barrier)")
        dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
    dist.all_reduce(metrics)
    metrics /= world
    if rank == 0 or (args.tqdm and local_rank == 0):
        msg = f"step {step} loss {metrics[0]:.4f} acc {metrics[1]:.3f}"
        if args.tqdm:
            it.set_postfix(loss=f"{metrics[0]:.3f}")
        else:
            log(msg)
    elif local_rank == 0 and step % 4 == 0:
        log(f"step {step} local_loss {loss.item():.4f}")
    if args.fault == "oom-eval" and is_fault and step == args.fault_step:
        log(f"running eval with eval_batch={args.eval_batch}")
        with torch.no_grad():
            hid = torch.randn(args.eval_batch, 4096)
            big = nn.Linear(4096, 4096)(hid)
            log(f"eval done {big.shape}")
    time.sleep(args.sleep)

# ---------------------------------------------------------------- save (node-local, local_rank 0 of every node)
dist.barrier()
if local_rank == 0:
    ckpt_dir = os.environ.get("CKPT_DIR", os.path.join(run_dir, f"ckpt_{host}"))
    os.makedirs(ckpt_dir, exist_ok=True)
    path = os.path.join(ckpt_dir, "last.pt")
    log(f"saving checkpoint to {path}")
    with open(path, "wb") as f:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": args.steps}, f)
    with open(os.path.join(ckpt_dir, "trainer_state.json"), "w") as f:
        json.dump({"step": args.steps, "world": world}, f)
dist.barrier()
log("training finished")
dist.destroy_process_group()
