"""Tiny regression/classification trainer; --fault selects a training-dynamics bug."""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=100)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--fmt", default="kv", choices=["kv", "rank", "tqdm", "logging"])
p.add_argument("--every", type=int, default=10)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=46171)
p.add_argument("--opt", default="sgd")
p.add_argument("--accum", type=int, default=1)
p.add_argument("--arch", default="mlp")
p.add_argument("--momentum", type=float, default=0.9)
p.add_argument("--anomaly", action="store_true")
p.add_argument("--warnings", action="store_true")
p.add_argument("--noise", type=float, default=0.1)
args = p.parse_args()

def run(rank, world):
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    log = None
    if args.fmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("trainer")
    def out(msg):
        if log: log.info(msg)
        else: print(msg, flush=True)
    d_in = 32
    model = nn.Sequential(nn.Linear(d_in, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))
    if args.arch == "linear":
        model = nn.Sequential(nn.Linear(d_in, 64), nn.Linear(64, 1))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    if args.opt == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    g = torch.Generator().manual_seed(1234)
    W = torch.randn(d_in, 1, generator=g) / math.sqrt(d_in)
    gd = torch.Generator().manual_seed(100 + rank)
    steps_per_epoch = 50
    sched = None
    if args.fault == "sched_per_batch":
        # intended: decay x0.5 every epoch; stepped every batch instead
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    warm = None
    if args.fault == "warmup_jump":
        peak = args.lr * 40  # peak lr copied from a config for a much larger batch
        def warm(step):
            if step < args.fault_step:
                return args.lr
            return peak
    out(f"world_size={world} rank={rank} fault={args.fault} lr={args.lr} opt={args.opt} steps={args.steps}")
    it = range(1, args.steps + 1)
    pbar = None
    if args.fmt == "tqdm" and rank == 0:
        from tqdm import tqdm
        pbar = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, mininterval=0.5)
        it = pbar
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    if args.warnings:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
        sched.step()  # called before the first optimizer.step(): torch warns
        W = torch.tensor(W)  # copy-construct: torch warns
    opt.zero_grad()
    t0 = time.time()
    for step in it:
        x = torch.randn(64, d_in, generator=gd)
        y = x @ W + args.noise * torch.randn(64, 1, generator=gd)
        if args.fault == "late_nan" and rank == args.fault_rank and step == args.fault_step:
            # a feature column normalised by a zero std in one shard
            x[:, 3] = x[:, 3] / torch.zeros(64)
        if args.fault == "zero_row" and rank == args.fault_rank and step >= args.fault_step:
            x[5] = 0.0
        if args.fault == "noisy":
            y = y + (2.0 if step % 7 == 0 else 0.0) * torch.randn(64, 1, generator=gd)
        if warm is not None:
            for pg in opt.param_groups: pg["lr"] = warm(step)
        pred = model(x)
        if args.fault == "zero_row":
            # padded rows are masked out of the prediction; hand-written L2 norm as a regulariser
            mask = (x.abs().sum(1, keepdim=True) > 0).float()
            pm = pred * mask
            loss = ((pred - y) ** 2).mean() + 1e-4 * pm.pow(2).sum(1).sqrt().mean()
        else:
            loss = ((pred - y) ** 2).mean()
        if args.fault == "accum_bug":
            loss.backward()  # never divided by accum; zero_grad only at epoch start
            if step % args.accum == 0:
                opt.step()
            if step % (steps_per_epoch * 20) == 0:
                opt.zero_grad(set_to_none=False)
        else:
            if args.fault == "scaler_bug":
                # hand-rolled dynamic loss scaler: grows the scale but never unscales the grads before step()
                scale = 2.0 ** (step // 40)
                (loss * scale / args.accum).backward()
            else:
                (loss / args.accum).backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0 if args.fault == "gradnorm" else 1e9)
            if step % args.accum == 0:
                opt.step(); opt.zero_grad()
        if args.fault == "accum_bug":
            gn = torch.sqrt(sum((p.grad.detach() ** 2).sum() for p in model.parameters() if p.grad is not None))
        if sched is not None:
            sched.step()
        lr = opt.param_groups[0]["lr"]
        if step % args.every == 0 or step == 1:
            l = loss.item()
            if args.fmt == "kv":
                out(f"{time.strftime('%Y-%m-%d %H:%M:%S')} rank={rank} step={step} loss={l:.4f} lr={lr:.3e} grad_norm={gn:.3f} time={time.time()-t0:.1f}s")
            elif args.fmt == "rank":
                out(f"[rank {rank}] step {step} loss {l:.4f} lr {lr:.2e} gnorm {gn:.3f}")
            elif args.fmt == "tqdm":
                if pbar is not None:
                    pbar.set_postfix(loss=f"{l:.4f}", lr=f"{lr:.1e}", gnorm=f"{gn:.2f}")
                    if step % (args.every * 10) == 0:
                        pbar.write(f"step {step}: loss={l:.4f} grad_norm={gn:.3f}")
            else:
                out(f"step={step} loss={l:.5f} lr={lr:.3e} grad_norm={gn:.4f}")
    out(f"training finished: {args.steps} steps in {time.time()-t0:.1f}s final_loss={loss.item():.4f}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()

def _spawn_entry(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    run(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
