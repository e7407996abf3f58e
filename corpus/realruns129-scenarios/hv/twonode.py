"""Tiny two-node DDP training job; --fault selects an induced failure on --fault-rank at --fault-step."""
import argparse, os, sys, time, json, signal, warnings, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=3)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--data-dir", default="/work/rr129/hv/data")
p.add_argument("--ckpt-dir", default="/work/rr129/hv/ckpt")
a = p.parse_args()

if a.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(msg):
    if a.use_logging: log.info(msg)
    else: print(msg, flush=True)

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"]); lrank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
say(f"[rank {rank}/{world}] host={os.environ.get('GROUP_RANK')} local_rank={lrank} pid={os.getpid()} init done")
torch.manual_seed(0)

cfg = {"vocab": 100, "dim": 32, "hidden": 64, "classes": 4}
if a.fault == "config-json" and rank == a.fault_rank:
    # node-local copy of the config got written half-way by a sync job
    path = os.path.join(a.data_dir, f"node{os.environ.get('GROUP_RANK')}", "model_config.json")
    cfg = json.load(open(path))

class Net(nn.Module):
    def __init__(self, c, extra=False):
        super().__init__()
        self.emb = nn.Embedding(c["vocab"], c["dim"])
        self.fc1 = nn.Linear(c["dim"], c["hidden"])
        self.bn = nn.BatchNorm1d(c["hidden"])
        self.aux = nn.Linear(c["hidden"], c["classes"])
        self.head = nn.Linear(c["hidden"], c["classes"])
        self.extra = extra
    def forward(self, x, use_aux=True):
        h = self.emb(x).mean(1)
        h = torch.relu(self.bn(self.fc1(h)))
        out = self.head(h)
        if use_aux: out = out + 0.1 * self.aux(h)
        return out

model = Net(cfg)
find_unused = a.fault == "warn-unused"
ddp = DDP(model, find_unused_parameters=find_unused)
opt = torch.optim.SGD(ddp.parameters(), lr=(1e30 if a.fault == "nan" and rank == a.fault_rank else 0.05))
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)

N = 64
X = torch.randint(0, 100, (N, 8)); Y = torch.randint(0, 4, (N,))
if a.fault == "index" and rank == a.fault_rank:
    # this node's tokenized shard was built with a larger vocabulary
    X = torch.randint(0, 160, (N, 8))
ds = TensorDataset(X, Y)
if a.fault == "sampler-rank" :
    # num_replicas taken from the per-node process count instead of the job's world size
    sampler = DistributedSampler(ds, num_replicas=int(os.environ["LOCAL_WORLD_SIZE"]), rank=rank)
else:
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
bs = 8
if a.fault == "bn-one" and rank == a.fault_rank:
    ds = TensorDataset(X[:9], Y[:9]); sampler = None
loader = DataLoader(ds, batch_size=bs, sampler=sampler, shuffle=False)

if a.fault == "fnf" and rank == a.fault_rank:
    shard = os.path.join(a.data_dir, f"shard-{rank:05d}.pt")
    extra = torch.load(shard)

if a.fault.startswith("warn"):
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.", UserWarning)

it = range(a.steps)
if a.progress:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", file=sys.stdout, mininterval=0, ncols=80)
lossf = nn.CrossEntropyLoss()
step = 0
batches = iter(loader)
for step in it:
    try:
        xb, yb = next(batches)
    except StopIteration:
        batches = iter(loader); xb, yb = next(batches)
    if a.fault == "warn-sched" and step == 0 and rank == 0:
        sched.step()
    if a.fault == "shape" and rank == a.fault_rank and step == a.fault_step:
        xb = xb.float()  # features path switched on: raw floats fed instead of token ids
        out = ddp.module.fc1(xb)
    if a.fault == "hang" and rank == a.fault_rank and step == a.fault_step:
        say(f"[rank {rank}] step {step}: waiting for eval results on shared fs ...")
        while not os.path.exists(os.path.join(a.ckpt_dir, "eval_done.flag")):
            time.sleep(1)
    if a.fault == "kill" and rank == a.fault_rank and step == a.fault_step:
        open(f"/work/rr129/hv/run/pid-{rank}", "w").write(str(os.getpid()))
        time.sleep(30)
    use_aux = not (a.fault == "unused" and rank == a.fault_rank and step >= a.fault_step)
    out = ddp(xb, use_aux=use_aux)
    loss = lossf(out, yb)
    if not torch.isfinite(loss):
        raise RuntimeError(f"Non-finite loss {loss.item()} at step {step} on rank {rank}; aborting")
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 2 == 1: sched.step()
    if rank % 2 == 0 and not a.progress:
        say(f"[rank {rank}] step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")
    if a.fault == "ckpt-perm" and rank == a.fault_rank and step == a.fault_step:
        os.makedirs(a.ckpt_dir, exist_ok=True)
        torch.save(ddp.module.state_dict(), os.path.join(a.ckpt_dir, f"step{step}.pt"))
        say(f"[rank {rank}] saved checkpoint step{step}.pt")
    if a.fault == "disk-full" and rank == a.fault_rank and step == a.fault_step:
        with open(os.path.join(a.ckpt_dir, f"metrics-rank{rank}.jsonl"), "w") as f:
            blob = json.dumps({"step": step, "emb": ddp.module.emb.weight.tolist()})
            for _ in range(200):
                f.write(blob + "\n")
dist.barrier()
if rank == 0:
    say("training finished, all ranks at final barrier")
dist.destroy_process_group()
