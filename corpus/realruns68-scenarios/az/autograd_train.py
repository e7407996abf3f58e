"""Small regression/classification training with autograd bugs selectable per rank/step.
Runs single-process, under torchrun (DDP/gloo) or via torch.multiprocessing.spawn (--spawn N)."""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=[
    "none", "inplace", "leaf_inplace", "backward_twice", "fn_grad_count", "int_grad",
    "vmap_item", "detached", "inference", "func_grad_nonscalar", "anomaly_warn"])
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", default="31460")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noisy", action="store_true", help="find_unused_parameters + warmup scheduler")
args = p.parse_args()


class ScaledClamp(torch.autograd.Function):
    """clamp(x*s) with straight-through gradient; s is a learnable scale"""
    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x, s)
        return (x * s).clamp(-3, 3)

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * s          # BUG: forgot the gradient for s


class Net(nn.Module):
    def __init__(self, fault):
        super().__init__()
        self.fault = fault
        self.emb = nn.Linear(16, 64)
        self.fc = nn.Linear(64, 64)
        self.out = nn.Linear(64, 4)
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        h = torch.sigmoid(self.emb(x))
        if self.fault == "inplace":
            h.mul_(2.0).sub_(1.0)          # rescale sigmoid to [-1,1] in place
        elif self.fault == "fn_grad_count":
            h = ScaledClamp.apply(h, self.scale)
        else:
            h = h * self.scale
        h = F.relu(self.fc(h))
        return self.out(h)


def worker(rank, world):
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    faulty = args.fault != "none" and rank == args.fault_rank
    torch.manual_seed(0)
    net = Net("fn_grad_count" if (faulty and args.fault == "fn_grad_count" and args.fault_step == 0) else "none")
    model = net
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.noisy)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5) if args.noisy else None
    if sched is not None:
        sched.step()   # warmup: advance once before training starts
    g = torch.Generator().manual_seed(100 + rank)
    if args.fault == "anomaly_warn":
        torch.autograd.set_detect_anomaly(True)
    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc=f"epoch 0", file=sys.stdout, mininterval=0)
    for step in it:
        x = torch.randn(32, 16, generator=g)
        y = torch.randint(0, 4, (32,), generator=g)
        active = faulty and step >= args.fault_step
        if active and args.fault in ("inplace", "fn_grad_count"):
            net.fault = args.fault
        if active and args.fault == "int_grad":
            # mixup on labels: interpolate one-hot targets with a learnable temperature
            lam = torch.tensor(0.7)
            y = (lam * y + (1 - lam) * y.flip(0)).long()
            y.requires_grad_(True)
        if active and args.fault == "inference":
            with torch.inference_mode():
                x = (x - x.mean(0)) / x.std(0)   # normalise features "cheaply"
        logits = model(x)
        if active and args.fault == "vmap_item":
            from torch.func import vmap
            def per_sample_margin(l, t):
                top = l.argmax().item()
                return l[t] - l[top]
            margin = vmap(per_sample_margin)(logits, y)
            loss = F.cross_entropy(logits, y) - 0.1 * margin.mean()
        elif active and args.fault == "func_grad_nonscalar":
            from torch.func import grad
            gx = grad(lambda inp: model(inp))(x)
            loss = F.cross_entropy(logits, y) + 1e-3 * gx.pow(2).sum()
        else:
            loss = F.cross_entropy(logits, y)
        if active and args.fault == "detached":
            loss = torch.tensor(loss.item())   # "cheap" reduce of a scalar for logging reused as loss
        opt.zero_grad()
        loss.backward()
        if active and args.fault == "backward_twice":
            # extra L2 term added after backward, then backward again
            reg = sum(p.pow(2).sum() for p in model.parameters())
            (loss + 1e-4 * reg).backward()
        if active and args.fault == "leaf_inplace":
            w = (model.module if world > 1 else model).fc.weight
            w.clamp_(-0.5, 0.5)   # weight clipping, forgot torch.no_grad()
        opt.step()
        msg = f"[rank {rank}] step {step:03d} loss {loss.item():.4f} lr 0.05"
        if args.tqdm and rank == 0:
            it.set_postfix(loss=f"{loss.item():.3f}")
        else:
            print(msg, flush=True)
        time.sleep(0.2)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    print(f"[rank {rank}] done", flush=True)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        worker(0, 1)
