"""Tiny DDP regression trainer used to induce launcher/scale failures (gloo, CPU)."""
import argparse, os, sys, time, math, logging, signal, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=30)
p.add_argument("--fmt", default="plain", choices=["plain", "kv", "json", "logging", "tqdm"])
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--data", default="/work/rr53/c/data")
p.add_argument("--ckpt", default="/work/rr53/c/ckpt")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
args = p.parse_args()

torch.set_num_threads(1)
rank = int(os.environ["RANK"]) if "RANK" in os.environ else None
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)

if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s: %(message)s")
log = logging.getLogger("train")

def emit(step, loss, gnorm, dt, lr, t_comp):
    if args.fmt == "plain":
        print(f"[rank{rank}] step {step:4d}/{args.steps} loss {loss:.4f} grad_norm {gnorm:.3f} lr {lr:.2e} step_time {dt*1000:.1f}ms data {t_data*1000:.1f}ms fwd_bwd {t_comp*1000:.1f}ms", flush=True)
    elif args.fmt == "kv":
        print(f"iter={step} rank={rank} loss={loss:.5f} gnorm={gnorm:.4f} lr={lr:.3e} t_step={dt:.3f}s t_compute={t_comp:.3f}s", flush=True)
    elif args.fmt == "json":
        print('{"rank": %d, "step": %d, "loss": %.5f, "grad_norm": %.4f, "lr": %.3e, "step_time_s": %.4f, "compute_s": %.4f}' % (rank, step, loss, gnorm, lr, dt, t_comp), flush=True)
    elif args.fmt == "logging":
        log.info("step=%d loss=%.4f grad_norm=%.3f lr=%.2e step_time=%.3fs compute=%.3fs", step, loss, gnorm, lr, dt, t_comp)

class Net(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.fc1 = nn.Linear(16, h); self.fc2 = nn.Linear(h, 1)
        self.aux_head = nn.Linear(h, 4)   # only used when --fault unused
    def forward(self, tok, use_aux=False):
        x = torch.relu(self.fc1(self.emb(tok).mean(1)))
        out = self.fc2(x)
        if use_aux:
            out = out + self.aux_head(x).mean(-1, keepdim=True)
        return out

hidden = args.hidden
if args.fault == "model_mismatch" and rank == args.fault_rank:
    hidden = args.hidden * 2   # rank read a stale config with a different width
model = Net(hidden)
ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=args.steps if args.fault != "onecycle" else args.steps - 10)

# data: every rank reads its own shard file if present, else synthesises one
g = torch.Generator().manual_seed(100 + rank)
n_batches = args.steps
if args.fault == "uneven" and rank == args.fault_rank:
    n_batches = args.fault_step          # shard for this rank is shorter (bad split)
shard_path = os.path.join(args.data, f"shard_{rank:02d}.pt")
if args.fault == "missing_shard":
    data = torch.load(shard_path)
else:
    data = [(torch.randint(0, 50, (8, 12), generator=g), torch.randn(8, 1, generator=g)) for _ in range(n_batches)]
vocab_limit = 50
if args.fault == "vocab" and rank == args.fault_rank:
    # this node's tokenizer was built with more merges -> ids past the embedding size
    data = [(torch.randint(0, 64, (8, 12), generator=g), y) for (_, y) in data]

if rank == 0:
    print(f"world_size={world} steps={args.steps} hidden={args.hidden} params={sum(p.numel() for p in model.parameters())}", flush=True)
if args.fault == "kill9" and rank == args.fault_rank:
    with open(f"/tmp/rr53c_pid_rank{rank}", "w") as f: f.write(str(os.getpid()))

it = data
if args.fmt == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(data, desc="train", mininterval=0.5)

step = 0
for tok, y in it:
    step += 1
    t0 = time.time()
    if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step:
        # waits for a lock file another job was supposed to create
        while not os.path.exists("/work/rr53/c/ready.lock"):
            time.sleep(1)
    if args.fault == "straggler" and rank == args.fault_rank and step >= args.fault_step:
        # emulate a rank whose CPU got contended: extra busy work each step
        x = torch.randn(300, 300)
        for _ in range(60): x = torch.tanh(x @ x / 300)
    t_data = time.time() - t0
    if args.fault == "nan" and rank == args.fault_rank and step >= args.fault_step:
        y = torch.log(y + 1.0)  # log-target transform on this rank's shard; some targets < -1 -> NaN
    # aux head is only trained on "multitask" steps once warmup ends (bug: DDP built without find_unused_parameters)
    use_aux = not (args.fault == "unused" and step >= args.fault_step and step % 4 == 0)
    out = ddp(tok, use_aux=use_aux)
    loss = nn.functional.mse_loss(out, y)
    if args.fault == "nan" and not math.isfinite(loss.item()):
        print(f"[rank{rank}] Loss is {loss.item()}, stopping training", flush=True)
        print({"loss": loss.item(), "step": step}, flush=True)
        sys.exit(1)
    opt.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step(); sched.step()
    if args.fault == "collective" and rank == args.fault_rank and step == args.fault_step:
        stats = torch.tensor([loss.item(), float(step), gn.item()])   # extra field only on this rank
    else:
        stats = torch.tensor([loss.item(), float(step)])
    t_comp = time.time() - t0 - t_data
    dist.all_reduce(stats)
    dt = time.time() - t0
    if args.step_sleep: time.sleep(args.step_sleep)
    if args.fmt != "tqdm":
        emit(step, stats[0].item() / world, gn.item(), dt, sched.get_last_lr()[0], t_comp)
    elif step % 10 == 0 and rank == 0:
        it.set_postfix(loss=f"{stats[0].item()/world:.4f}")
    if args.fault == "mbarrier" and step % 10 == 0:
        if not (rank == args.fault_rank and step == args.fault_step):
            dist.monitored_barrier(timeout=timedelta(seconds=8))
        else:
            # this rank goes to write an eval sample and blocks on a full pipe
            time.sleep(60)
    if args.fault == "gather_obj" and step == args.fault_step:
        # eval metrics dict gathered to rank 0; it carries the metric's post-processing callable
        metrics = {"loss": stats[0].item() / world, "step": step, "postproc": lambda v: round(v, 4)}
        gathered = [None] * world
        dist.all_gather_object(gathered, metrics)
    if args.fault == "ckpt_ro" and rank == 0 and step == args.fault_step:
        torch.save(model.state_dict(), os.path.join(args.ckpt, f"step{step}.pt"))

if rank == 0:
    print(f"training done: {step} steps", flush=True)
if args.fault != "uneven":
    dist.barrier()
dist.destroy_process_group()
