"""DDP / state / autograd misuse scenarios. --fault selects the bug, --rank the rank, --step the step."""
import argparse, os, sys, time, logging, argparse as _ap
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29900)
p.add_argument("--logfmt", default="print")
p.add_argument("--tqdm", type=int, default=0)
p.add_argument("--ckdir", default="/work/rr54/i/ck")
args = p.parse_args()

class Net(nn.Module):
    def __init__(self, hidden=32, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(16, hidden); self.fc2 = nn.Linear(hidden, hidden)
        self.aux = nn.Linear(hidden, hidden); self.head = nn.Linear(hidden, 4)
        self.register_buffer("running", torch.zeros(hidden))
        self.use_aux = True
    def forward(self, x):
        h = torch.relu(self.fc1(x)); h = torch.relu(self.fc2(h))
        if self.use_aux: h = h + self.aux(h)
        if getattr(self, "ckpt_twice", False):
            from torch.utils.checkpoint import checkpoint
            h = checkpoint(self.fc2, h, use_reentrant=True)  # weight-shared refinement block
            h = checkpoint(self.fc2, torch.relu(h), use_reentrant=True)
        return self.head(h)

def run(rank, world):
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        log = lambda m: print(f"[rank{rank}] {m}", flush=True)
    if world > 1 or args.spawn:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    torch.manual_seed(0)
    f, fr = args.fault, args.rank
    hidden = 48 if (f == "model_mismatch" and rank == fr) else 32
    model = Net(hidden)
    if f == "lazy_module":
        model.head = nn.LazyLinear(4)
    if f == "frozen_all":
        for q in model.parameters(): q.requires_grad_(False)
    if f == "syncbn":
        model = nn.Sequential(nn.Linear(16, 32), nn.SyncBatchNorm(32), nn.ReLU(), nn.Linear(32, 4))
    if f == "buffer_mismatch" and rank == fr:
        model.register_buffer("running", torch.zeros(64))
    if f == "weights_only_resume":
        os.makedirs(args.ckdir, exist_ok=True)
        ck = os.path.join(args.ckdir, f"wo_{os.getpid()}.pt")
        torch.save({"model": model.state_dict(), "args": _ap.Namespace(lr=0.1, steps=8), "step": 100}, ck)
        log(f"resuming from {ck}")
        state = torch.load(ck)
        model.load_state_dict(state["model"])
    if f in ("state_dict_prefix", "state_dict_size", "opt_state"):
        os.makedirs(args.ckdir, exist_ok=True)
        ck = os.path.join(args.ckdir, f"{f}.pt")
        if rank == 0 and world > 1:
            # checkpoint written by a previous (DDP-wrapped / different-config) run
            src = Net(64 if f == "state_dict_size" else 32)
            sd = {("module." + k if f == "state_dict_prefix" else k): v for k, v in src.state_dict().items()}  # saved as ddp_model.state_dict()
            small = nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 4))
            o = torch.optim.AdamW(small.parameters(), lr=1e-3)
            small(torch.randn(2, 16)).sum().backward(); o.step()
            torch.save({"model": sd, "optim": o.state_dict(), "step": 500}, ck)
        if world > 1: dist.barrier()
        state = torch.load(ck, weights_only=True)
        if f != "opt_state":
            if rank == fr or world == 1:
                log(f"loading weights from {ck}")
                model.load_state_dict(state["model"])
            else:
                log("rank does not load; weights will be broadcast by DDP")
    if f == "warn_strict_false":
        sd = {("module." + k if k.startswith("aux") else k): v for k, v in model.state_dict().items()}
        res = model.load_state_dict(sd, strict=False)
        log(f"load_state_dict(strict=False): missing={res.missing_keys} unexpected={res.unexpected_keys}")
    ddp_kw = {}
    if f == "shared_ckpt": model.ckpt_twice = True
    if f in ("mark_twice", "warn_unused_true", "shared_ckpt"): ddp_kw["find_unused_parameters"] = True
    if world > 1 or args.spawn:
        model = DDP(model, **ddp_kw)
    inner = model.module if isinstance(model, DDP) else model
    if f == "param_after_wrap" and rank == fr:
        inner.head = nn.Linear(32, 4)  # replaced after DDP captured parameters
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if f == "opt_state" and rank == fr:
        log(f"restoring optimizer from {ck}")
        opt.load_state_dict(state["optim"])
    lossf = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", file=sys.stderr, mininterval=0)
    for step in it:
        x = torch.randn(8, 16, generator=g); y = torch.randint(0, 4, (8,), generator=g)
        hit = step == args.step and (rank == fr or world == 1)
        if f == "unused" and rank == fr and step >= args.step:
            inner.use_aux = False  # rank-specific eval-style branch
        if f == "mark_twice":
            from torch.utils.checkpoint import checkpoint
            out = checkpoint(model, x.requires_grad_(step >= 0 and args.rank >= 0), use_reentrant=True)
        elif f == "autocast_dtype" and hit:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                feats = inner.fc2(torch.relu(inner.fc1(x)))
            out = feats @ inner.head.weight.t() + inner.head.bias
        else:
            out = model(x)
        if f == "module_attr" and hit:
            log(f"use_aux flag: {model.use_aux}")
        loss = lossf(out, y)
        if f == "inplace_op" and hit:
            probs = torch.sigmoid(out); probs += 1e-6; loss = probs.mean()
        if f == "nonscalar" and hit:
            loss = nn.CrossEntropyLoss(reduction="none")(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if f == "backward_twice" and hit:
            log("extra backward for gradient-norm probe")
            loss.backward()
        if f == "leaf_inplace" and hit:
            for q in inner.parameters():
                q.sub_(1e-3 * q.grad)  # manual weight decay outside no_grad
        opt.step()
        if step % 2 == 0 or hit:
            log(f"step {step} loss {loss.item():.4f}")
    if world > 1 or args.spawn:
        dist.barrier()
    log("training done")
    if dist.is_initialized(): dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
        mp.spawn(run, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
