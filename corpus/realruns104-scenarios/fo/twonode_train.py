"""Tiny two-node DDP training job (gloo, CPU). Flags select an induced fault, the rank and the step."""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=30)
p.add_argument('--fault', default='none')
p.add_argument('--fault-rank', type=int, default=-1)
p.add_argument('--fault-step', type=int, default=10)
p.add_argument('--pg-timeout', type=int, default=30)
p.add_argument('--log-style', default='print', choices=['print', 'logging', 'tqdm'])
p.add_argument('--data-dir', default='/work/rr104/fo/data')
p.add_argument('--ckpt-dir', default='/work/rr104/fo/ckpt')
p.add_argument('--hidden', type=int, default=64)
p.add_argument('--noise', action='store_true')
p.add_argument('--step-sleep', type=float, default=0.2)
p.add_argument('--save-every', type=int, default=0)
p.add_argument('--resume', default='')
args = p.parse_args()

rank = int(os.environ.get('RANK', 0)); world = int(os.environ.get('WORLD_SIZE', 1))
local_rank = int(os.environ.get('LOCAL_RANK', 0))
if args.log_style == 'logging':
    logging.basicConfig(level=logging.INFO, format=f'%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s')
log = logging.getLogger('train')
def say(msg):
    if args.log_style == 'logging': log.info(msg)
    else: print(f"[rank{rank}] {msg}", flush=True)

fault_here = args.fault_rank in (-1, rank) and args.fault != 'none'

dist.init_process_group('gloo', timeout=timedelta(seconds=args.pg_timeout))
say(f"initialized process group: world_size={world} local_rank={local_rank} host={os.uname().nodename} "
    f"group_rank={os.environ.get('GROUP_RANK')} restart={os.environ.get('TORCHELASTIC_RESTART_COUNT')}")
torch.manual_seed(0)

vocab = 128
hidden = args.hidden
if args.fault == 'model-mismatch' and fault_here:
    hidden = 96  # node-local config override
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
        self.head = nn.Linear(hidden, vocab)
    def forward(self, x):
        h = self.emb(x)
        h = h + self.ff(h)
        return self.head(h)

model = Net()
if args.noise:
    warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning)
    if rank == 0:
        print("WARNING: NCCL_SOCKET_IFNAME not set, falling back to gloo defaults; this may be slow", file=sys.stderr, flush=True)
ddp = DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)

# data: each rank reads its shard file if present, otherwise synthetic tokens
shard_path = os.path.join(args.data_dir, f"shard_{rank:05d}.pt")
if args.fault in ('missing-shard',) and fault_here:
    data = torch.load(shard_path)
elif os.path.exists(shard_path):
    data = torch.load(shard_path)
else:
    g = torch.Generator().manual_seed(rank)
    data = torch.randint(0, vocab, (400, 17), generator=g)

if args.resume:
    say(f"resuming from {args.resume}")
    sd = torch.load(args.resume, map_location='cpu')
    ddp.module.load_state_dict(sd['model'])
    opt.load_state_dict(sd['opt'])

it = range(args.steps)
if args.log_style == 'tqdm' and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc='train', dynamic_ncols=False, ncols=100)
bs = 16
t_start = time.time()
for step in it:
    idx = torch.randint(0, data.shape[0], (bs,))
    batch = data[idx]
    x, y = batch[:, :-1], batch[:, 1:]
    if args.fault == 'hang-mb' and step == args.fault_step:
        # all ranks sync before the eval phase; the faulty rank is stuck on the eval lock
        if rank == args.fault_rank:
            say("waiting for eval lock /work/rr104/fo/eval.lock ...")
            import fcntl
            lk = open('/work/rr104/fo/eval.lock', 'w')
            fcntl.flock(lk, fcntl.LOCK_EX)
        say("entering pre-eval barrier")
        dist.monitored_barrier(timeout=timedelta(seconds=15))
    if fault_here and step == args.fault_step:
        if args.fault == 'bad-token':
            x = x + vocab // 2  # tokenizer/vocab mismatch on this node: ids beyond the embedding
        elif args.fault == 'hang':
            say("waiting for eval lock /work/rr104/fo/eval.lock ...")
            import fcntl
            lk = open('/work/rr104/fo/eval.lock', 'w')
            fcntl.flock(lk, fcntl.LOCK_EX)   # held by another process: blocks forever
        elif args.fault == 'collective':
            # rank logs a metric tensor of different length than the others
            m = torch.zeros(3 if rank % 2 else 4)
            dist.all_reduce(m)
        elif args.fault == 'segv':
            import ctypes
            ctypes.string_at(0)
        elif args.fault == 'exit':
            sys.exit(1)
        elif args.fault == 'oom':
            say("building attention cache for eval ...")
            cache = torch.empty(8192, 4096, 64)
        elif args.fault == 'shard-params':
            # ZeRO-1 style: every rank owns an equal slice of the flat parameter vector
            flat = torch.cat([q.detach().reshape(-1) for q in ddp.parameters()])
            my_slice = flat.view(world, -1)[rank]
            say(f"optimizer shard: {my_slice.numel()} params")
        elif args.fault == 'nan':
            with torch.no_grad():
                ddp.module.head.weight.mul_(float('inf'))
    logits = ddp(x)
    loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
    if args.fault == 'nan' and not torch.isfinite(loss):
        raise FloatingPointError(f"loss is {loss.item()} at step {step}, aborting")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    stats = {}
    if rank == 0:
        stats['grad_norm'] = float(sum(q.grad.norm() ** 2 for q in ddp.parameters() if q.grad is not None) ** 0.5)
    if args.fault == 'keyerror' and step >= args.fault_step and step % 5 == 0:
        # per-node progress line (bug: stats is only filled on global rank 0)
        if local_rank == 0:
            say(f"node progress step {step} grad_norm {stats['grad_norm']:.3f}")
    if step % 5 == 0 or step == args.steps - 1:
        lt = loss.detach().clone(); dist.all_reduce(lt); lt /= world
        if rank == 0 and args.log_style != 'tqdm':
            say(f"step {step:4d} | loss {lt.item():.4f} | lr 3.0e-03 | {(time.time()-t_start)/(step+1)*1000:.0f} ms/it")
        elif rank == 0:
            it.set_postfix(loss=f"{lt.item():.3f}")
    if args.save_every and (step + 1) % args.save_every == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        if args.fault == 'perm':  # node-local checkpoints written by local rank 0
            d = os.path.join(args.ckpt_dir, f"node{os.environ.get('GROUP_RANK')}"); os.makedirs(d, exist_ok=True)
            path = os.path.join(d, f"step{step+1}.pt")
        else:
            path = os.path.join(args.ckpt_dir, f"step{step+1}.pt")
        if (args.fault == 'perm' and local_rank == 0) or (args.fault != 'perm' and rank == 0):
            torch.save({'model': ddp.module.state_dict(), 'opt': opt.state_dict(), 'step': step + 1}, path)
            say(f"saved checkpoint {path}")
        dist.barrier()
    time.sleep(args.step_sleep)
dist.barrier()
say(f"training finished in {time.time()-t_start:.1f}s")
dist.destroy_process_group()
