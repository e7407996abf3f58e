"""Plain-PyTorch DDP trainer with periodic checkpointing and resume.

Faults are real code paths / misconfigurations selected by flags:
  --arch v1|v2          model layout (v2 adds a LayerNorm + renames head)
  --hidden N            hidden width (changing it between save and resume = shape mismatch)
  --resume PATH|auto    resume from file, or 'auto' = newest ckpt in --ckpt-dir
  --per-rank-ckpt       each rank saves/loads its own shard file ckpt_rank{r}.pt
  --save-ddp-wrapped    save ddp.state_dict() (module. prefix) instead of model.state_dict()
  --load-into-ddp/--load-into-model
  --nodecay-groups      build optimizer with two param groups (bias/no-decay split)
  --save-args           store argparse Namespace inside checkpoint
  --eval-reload         after training, rank 0 saves 'best.pt' and every rank reloads it (no barrier)
  --barrier-in-save     bug: dist.barrier() placed inside the rank-0 save branch
  --metric-in-save      bug: global metric all_reduce computed inside rank-0 save branch
"""
import argparse, os, sys, time, glob, logging, warnings, datetime, math
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--arch", default="v1")
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--ckpt-dir", default="/work/rr63/am/ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--per-rank-ckpt", action="store_true")
p.add_argument("--save-ddp-wrapped", action="store_true")
p.add_argument("--load-into", default="model", choices=["model", "ddp"])
p.add_argument("--nodecay-groups", action="store_true")
p.add_argument("--save-args", action="store_true")
p.add_argument("--eval-reload", action="store_true")
p.add_argument("--barrier-in-save", action="store_true")
p.add_argument("--metric-in-save", action="store_true")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noisy", action="store_true")
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--big", type=int, default=0, help="extra embedding rows to make ckpt larger")
p.add_argument("--strict", type=int, default=1)
p.add_argument("--save-fileobj", action="store_true", help="write through a Python file object")
p.add_argument("--atomic-tmp", default=None, help="write to this tmp dir first, then os.rename into place")
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)


class Net(nn.Module):
    def __init__(self, arch, hidden, big):
        super().__init__()
        self.emb = nn.Embedding(512 + big, 32)
        self.fc1 = nn.Linear(32, hidden)
        if arch == "v2":
            self.norm = nn.LayerNorm(hidden)
            self.classifier = nn.Linear(hidden, 10)
        else:
            self.fc2 = nn.Linear(hidden, 10)
        self.arch = arch

    def forward(self, x):
        h = torch.relu(self.fc1(self.emb(x).mean(1)))
        if self.arch == "v2":
            return self.classifier(self.norm(h))
        return self.fc2(h)


torch.manual_seed(1234 + rank)
model = Net(args.arch, args.hidden, args.big)
ddp = DDP(model) if distributed else model
if args.nodecay_groups:
    decay = [p_ for n, p_ in model.named_parameters() if not n.endswith("bias")]
    nodecay = [p_ for n, p_ in model.named_parameters() if n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": nodecay, "weight_decay": 0.0}], lr=1e-3)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, 10, 0.9)
lossf = nn.CrossEntropyLoss()

log(f"world_size={world} arch={args.arch} hidden={args.hidden} params={sum(x.numel() for x in model.parameters())}")
if args.noisy:
    warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
    warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors.")


def ckpt_path(step):
    if args.per_rank_ckpt:
        return os.path.join(args.ckpt_dir, f"step{step:05d}", f"ckpt_rank{rank}.pt")
    return os.path.join(args.ckpt_dir, f"step{step:05d}.pt")


def find_latest():
    if args.per_rank_ckpt:
        cands = sorted(glob.glob(os.path.join(args.ckpt_dir, "step*")))
        return os.path.join(cands[-1], f"ckpt_rank{rank}.pt") if cands else None
    cands = sorted(glob.glob(os.path.join(args.ckpt_dir, "step*.pt")))
    return cands[-1] if cands else None


start = 0
if args.resume:
    path = find_latest() if args.resume == "auto" else args.resume
    if path is None:
        log(f"no checkpoint found in {args.ckpt_dir}, starting from scratch")
    else:
        log(f"resuming from {path}")
        state = torch.load(path, map_location="cpu")
        target = ddp if args.load_into == "ddp" else model
        res = target.load_state_dict(state["model"], strict=bool(args.strict))
        if not args.strict:
            log(f"load_state_dict result: {res}")
        opt.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        start = state["step"]
        log(f"resumed at step {start}, last loss {state.get('loss', float('nan')):.4f}")


def save(step, loss):
    sd = ddp.state_dict() if args.save_ddp_wrapped else model.state_dict()
    state = {"model": sd, "optim": opt.state_dict(), "sched": sched.state_dict(),
             "step": step, "loss": loss}
    if args.save_args:
        state["args"] = args
    path = ckpt_path(step)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    t0 = time.time()
    if args.atomic_tmp:
        import tempfile
        fd, tmp = tempfile.mkstemp(suffix=".pt", dir=args.atomic_tmp)
        os.close(fd)
        torch.save(state, tmp)
        os.rename(tmp, path)  # atomic publish
    elif args.save_fileobj:
        with open(path, "wb") as fh:
            torch.save(state, fh)
    else:
        torch.save(state, path)
    log(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.2f} MB) in {time.time()-t0:.2f}s")


g = torch.Generator().manual_seed(99 + rank)
it = range(start, args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", disable=False, mininterval=0, file=sys.stderr)
loss_v = float("nan")
for step in it:
    x = torch.randint(0, 512, (16, 8), generator=g)
    y = x[:, 0] % 10
    out = ddp(x)
    loss = lossf(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    loss_v = loss.item()
    if (step + 1) % 5 == 0:
        msg = f"step {step+1}/{args.steps} loss={loss_v:.4f} lr={sched.get_last_lr()[0]:.2e}"
        if args.tqdm:
            it.set_postfix(loss=f"{loss_v:.3f}")
        else:
            log(msg)
    if (step + 1) % args.save_every == 0:
        if args.per_rank_ckpt:
            save(step + 1, loss_v)
        elif rank == 0:
            if args.metric_in_save:
                t = torch.tensor([loss_v])
                dist.all_reduce(t)
                log(f"global mean loss {t.item()/world:.4f}")
            save(step + 1, loss_v)
            if args.barrier_in_save:
                dist.barrier()
        if distributed and not args.barrier_in_save:
            dist.barrier()

if args.eval_reload:
    best = os.path.join(args.ckpt_dir, "best.pt")
    if rank == 0:
        save_sd = {"model": model.state_dict(), "optim": opt.state_dict(), "sched": sched.state_dict(),
                   "step": args.steps, "loss": loss_v}
        log(f"writing best model to {best}")
        torch.save(save_sd, best)
    # every rank reloads best weights for final evaluation
    sd = torch.load(best, map_location="cpu")
    model.load_state_dict(sd["model"])
    log("reloaded best weights for evaluation")

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log("training complete")
