"""Trainer started by hand from shell scripts: RANK/WORLD_SIZE/MASTER_* come from the environment.
--fault selects a bug, --fault-rank the rank that has it, --fault-step the step."""
import argparse, os, sys, time, json, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--ckpt", default="")
p.add_argument("--out", default="/work/rr59/x/work/out")
p.add_argument("--data", default="")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--log", action="store_true")
p.add_argument("--lr", type=float, default=0.05)
args = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
if args.log:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    say = logging.getLogger("train").info
else:
    def say(m): print(f"[rank{rank}] {m}", flush=True)

torch.manual_seed(0)
say(f"starting pid={os.getpid()} world={world} master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
if args.fault == "double_init" and rank == args.fault_rank:
    # helper from a utils module that "makes sure" distributed is set up
    def setup_distributed():
        dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=args.pg_timeout))
    setup_distributed()

hidden = args.hidden
if args.fault == "model_mismatch" and rank == args.fault_rank:
    hidden = int(os.environ.get("HIDDEN", "48"))
vocab = 100
class Net(nn.Module):
    def __init__(s, h):
        super().__init__(); s.emb = nn.Embedding(vocab, h); s.fc1 = nn.Linear(h, h); s.head = nn.Linear(h, vocab); s.aux = nn.Linear(h, 1)
    def forward(s, x, use_aux=True):
        h = torch.relu(s.fc1(s.emb(x).mean(1)))
        out = s.head(h)
        if use_aux: out = out + s.aux(h)
        return out
model = Net(hidden)
if args.ckpt and args.fault in ("resume", "truncated_ckpt", "weights_only", "missing_ckpt", "state_dict", "optim_state"):
    if args.fault != "resume" and rank != args.fault_rank:
        path = args.ckpt.replace("BAD", "good")
    else:
        path = args.ckpt
    say(f"resuming from {path}")
    sd = torch.load(path, map_location="cpu")
    model.load_state_dict(sd["model"])
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
if args.ckpt and "optim" in (sd if args.ckpt and args.fault in ("resume","optim_state","state_dict","truncated_ckpt","weights_only","missing_ckpt") else {}):
    opt.load_state_dict(sd["optim"])
lossf = nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(rank)
say(f"model params={sum(p.numel() for p in model.parameters())} lr={args.lr}")
t0 = time.time()
for step in range(1, args.steps + 1):
    x = torch.randint(0, vocab, (8, 6), generator=g)
    y = torch.randint(0, vocab, (8,), generator=g)
    if step == args.fault_step and rank == args.fault_rank:
        if args.fault == "vocab":
            x = x + 60  # tokenizer of the new corpus has 160 ids, model built with vocab=100
        elif args.fault == "collective_shape":
            stats = torch.tensor([float(step), 1.0, 2.0])  # new metric appended only on this rank's code path
            dist.all_reduce(stats)
        elif args.fault == "hang":
            say("waiting for /work/rr59/x/work/data.ready ...")
            while not os.path.exists("/work/rr59/x/work/data.ready.never"): time.sleep(0.5)
        elif args.fault == "segv":
            import ctypes; ctypes.string_at(0)
        elif args.fault == "oom":
            say("building full-vocab logits cache")
            cache = torch.empty((60000, 60000), dtype=torch.float32)
        elif args.fault == "keyerror":
            cfg = json.loads('{"lr": 0.05, "warmup": 10}'); sched_steps = cfg["total_steps"]
        elif args.fault == "fd_leak":
            handles = []
            for i in range(100000):
                handles.append(open(f"/work/rr59/x/work/shards/shard_{i % 50}.txt"))
        elif args.fault == "efbig" or args.fault == "enospc":
            os.makedirs(args.out, exist_ok=True)
            big = {"model": model.state_dict(), "buf": torch.randn(3_000_000)}
            say(f"saving snapshot to {args.out}/snap_{rank}.pt")
            torch.save(big, f"{args.out}/snap_{rank}.pt")
        elif args.fault == "unused":
            pass
        elif args.fault == "lr_nan":
            for gp in opt.param_groups: gp["lr"] = 1e6
    if args.fault == "alarm" and step == 3:
        ids = torch.tensor(x)  # copy of the batch for the sample logger
        if rank == 0:
            import urllib.request
            try:
                urllib.request.urlopen("http://127.0.0.1:30149/api/push", data=json.dumps({"step": step}).encode(), timeout=2)
            except Exception:
                logging.getLogger("metrics").exception("metrics push to dashboard failed; continuing without dashboard")
    if args.fault == "alarm" and step == 6:
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1e-3)
        say(f"WARNING grad norm {gn.item():.3f} exceeds max_norm 0.001, gradients clipped")
    use_aux = not (args.fault == "unused" and step >= args.fault_step)
    out = ddp(x, use_aux=use_aux)
    loss = lossf(out, y)
    if not torch.isfinite(loss):
        raise RuntimeError(f"Loss is {loss.item()} at step {step}; stopping training")
    opt.zero_grad(); loss.backward(); opt.step()
    if args.fault == "warn_noise" and step == 3:
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order", UserWarning)
    lt = loss.detach().clone(); dist.all_reduce(lt); lt /= world
    if rank == 0:
        say(f"step {step}/{args.steps} loss={lt.item():.4f} {(time.time()-t0)/step*1000:.0f}ms/step")
    time.sleep(0.2)
if rank == 0:
    os.makedirs(args.out, exist_ok=True)
    torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": args.steps}, f"{args.out}/final.pt")
    say(f"saved {args.out}/final.pt")
dist.barrier()
dist.destroy_process_group()
say("done")
