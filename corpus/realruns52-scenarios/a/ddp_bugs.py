"""Small MLP/sequence classifier trained with DDP (gloo). --fault selects a model/loop bug on --fault-rank at --fault-step."""
import argparse, os, sys, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup, cleanup, get_logger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29531)
p.add_argument("--tslog", action="store_true")
p.add_argument("--hidden", type=int, default=32)
args = p.parse_args()

class Net(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_cls=4, aux=False):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_cls)
        self.aux_head = nn.Linear(hidden, n_cls) if aux else None
    def forward(self, x, use_aux=False):
        h = torch.sigmoid(self.fc1(x))
        if args.fault == "inplace":
            h.mul_(2.0)   # "rescale" in place: sigmoid output is saved for backward
        h = F.relu(self.fc2(h))
        if use_aux and self.aux_head is not None:
            return self.aux_head(h)
        return self.head(h)

def worker(rank_arg=None, world_arg=None):
    rank, world = setup(rank_arg, world_arg, args.port, timeout=30)
    log = get_logger(rank) if args.tslog else None
    say = (log.info if log else (lambda m: print(f"[rank{rank}] {m}", flush=True)))
    torch.manual_seed(0)
    hidden = args.hidden
    if args.fault == "model-mismatch" and rank == args.fault_rank:
        hidden = int(os.environ.get("HIDDEN_OVERRIDE", "48"))
    model = Net(hidden=hidden, aux=args.fault in ("unused", "none-warn"))
    if world > 1:
        model = DDP(model, find_unused_parameters=(args.fault == "none-warn"))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 4, 0.5)
    g = torch.Generator().manual_seed(rank)
    say(f"world_size={world} params={sum(p.numel() for p in model.parameters())} fault={args.fault}")
    for step in range(args.steps):
        x = torch.randn(8, 16, generator=g)
        y = torch.randint(0, 4, (8,), generator=g)
        hit = (step == args.fault_step and (rank == args.fault_rank or args.fault_rank < 0))
        if args.fault == "none-warn" and step == 0:
            sched.step()  # scheduler before optimizer: warning only
        if hit and args.fault == "shape":
            # bug: flatten features of a "pair" batch as (4, 32) instead of (8, 16)
            x = x.reshape(4, 32)
        if hit and args.fault == "dtype":
            x = torch.from_numpy(x.numpy().astype("float64"))
        out = model(x, use_aux=False)
        if args.fault == "target":
            loss = F.cross_entropy(out, F.one_hot(y, 4)) if hit else F.cross_entropy(out, y)
        else:
            loss = F.cross_entropy(out, y)
        opt.zero_grad()
        if hit and args.fault == "detached":
            loss = loss.detach() + 0.01 * sum(p.detach().pow(2).sum() for p in model.parameters())
        loss.backward()
        if hit and args.fault == "backward-twice":
            # bug: extra backward of the same loss for "gradient logging"
            loss.backward()
        if hit and args.fault == "ddp-attr":
            say(f"saving head weights {model.head.weight.shape}")
        if hit and args.fault == "manual-wd":
            # "manual weight decay" applied directly to the parameters (outside torch.no_grad)
            for prm in model.parameters():
                prm.sub_(1e-4 * prm)
        opt.step()
        if args.fault != "none-warn" or step > 0:
            sched.step()
        say(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
        time.sleep(0.2)
    say("training finished")
    cleanup()

def entry(rank, world):
    worker(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker()
