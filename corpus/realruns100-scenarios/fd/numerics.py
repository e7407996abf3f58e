"""Tiny DDP training with numerics faults. Flags select fault/rank/step."""
import argparse, os, sys, math, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--logstyle", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--lrmult", type=float, default=30.0)
p.add_argument("--port", type=int, default=42400)
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, d=32, h=64, c=8):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, h)
        self.head = nn.Linear(h, c)

    def forward(self, x):
        return self.head(F.gelu(self.fc2(F.gelu(self.fc1(x)))))


def focal_like_loss(logits, y, mask):
    # custom loss: mean NLL over "valid" rows, normalised by number of valid rows
    prob = F.softmax(logits, -1).gather(1, y[:, None]).squeeze(1)
    nll = -torch.log(prob) * mask
    return nll.sum() / mask.sum()


def main(rank=None, world=None):
    if rank is None:
        rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
    distributed = world > 1 or "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    if args.logstyle == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    def out(msg):
        if args.logstyle == "logging": log.info(msg)
        else: print(f"[rank{rank}] {msg}", flush=True)

    model = Net()
    if args.fault == "scaler_fp16":
        model = model.half()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    if args.fault in ("diverge", "spike_recover", "lr_high", "clip_warn"):
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    scaler = None
    if args.fault in ("scaler_fp16", "scaler_skip"):
        scaler = torch.amp.GradScaler("cpu", init_scale=2.**16)
    if args.fault in ("anomaly", "anomaly_inplace", "anomaly_ok"):
        torch.autograd.set_detect_anomaly(True)

    g = torch.Generator().manual_seed(1234 + rank)
    W = torch.randn(32, 8, generator=torch.Generator().manual_seed(7))
    it = range(args.steps)
    if args.logstyle == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", mininterval=0, dynamic_ncols=False, ncols=100)
    ema = None
    for step in it:
        x = torch.randn(64, 32, generator=g)
        y = (x @ W).argmax(-1)
        mask = torch.ones(64)
        hit = step == args.step and (rank == args.rank or args.rank < 0)
        if args.fault == "lr_high" and step == args.step:
            # warmup schedule bug: lr multiplied instead of set
            for pg in opt.param_groups: pg["lr"] = pg["lr"] * 1e6
        if args.fault == "div_zero" and hit:
            mask = (y == 99).float()   # shard with no valid rows for this filter
        if args.fault == "log_zero" and hit:
            x = x * 1e4                # unnormalised outlier batch -> softmax underflows to 0
        if args.fault == "spike_recover" and step == args.step and rank == args.rank:
            x = x * 40
        if args.fault == "diverge" and step == args.step:
            for pg in opt.param_groups: pg["lr"] = pg["lr"] * args.lrmult
        if args.fault in ("anomaly",) and hit:
            x = x * 1e4
        if args.fault == "fp16_autocast" and hit:
            x = x * 3e3
        if args.fault == "scaler_skip" and step in (args.step, args.step + 1) and rank == args.rank:
            x = x * 2e3

        if args.fault in ("fp16_autocast", "scaler_skip"):
            with torch.autocast("cpu", dtype=torch.float16):
                logits = model(x)
                loss = focal_like_loss(logits.float(), y, mask)
        elif args.fault == "scaler_fp16":
            logits = model(x.half())
            loss = F.cross_entropy(logits.float(), y)
        elif args.fault == "anomaly_inplace" and hit:
            m = model.module if distributed else model
            h = F.gelu(m.fc1(x))
            h2 = torch.sigmoid(m.fc2(h))
            h2 += 0.1          # "bias shift" added in place after sigmoid
            logits = m.head(h2)
            loss = F.cross_entropy(logits, y)
        else:
            logits = model(x)
            loss = focal_like_loss(logits, y, mask)

        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip if args.clip > 0 else float("inf"))
            scaler.step(opt); scaler.update()
        else:
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip if args.clip > 0 else float("inf"))
            opt.step()
        lv = loss.item()
        if args.fault == "clip_warn" and gn > 1.0 and step % 5 == 0:
            warnings.warn(f"gradient norm {gn:.2f} exceeds max_norm=1.0, gradients were clipped", RuntimeWarning)
        if args.fault == "scaler_skip" and scaler is not None and scaler.get_scale() < 2.**16 and step % 1 == 0 and step <= args.step + 3:
            out(f"step {step}: gradient overflow detected, skipping optimizer step; loss scale reduced to {scaler.get_scale():.0f}")
        ema = lv if ema is None else 0.9 * ema + 0.1 * lv
        if step % 5 == 0 or hit or not math.isfinite(lv) or args.fault in ("diverge", "spike_recover"):
            msg = f"step {step:4d} | loss {lv:.4f} | ema {ema:.4f} | grad_norm {float(gn):.3f} | lr {opt.param_groups[0]['lr']:.2e}"
            if args.logstyle == "tqdm" and rank == 0:
                from tqdm import tqdm; tqdm.write(msg)
            else:
                out(msg)
        if args.fault == "diverge" and step > 10 and math.isfinite(lv) and lv > 4 * ema and lv > 8:
            raise RuntimeError(f"Training diverged at step {step}: loss {lv:.1f} > 4x smoothed loss {ema:.2f}; lower the learning rate or enable warmup")
        if not math.isfinite(lv) and scaler is None:
            print(f"Loss is {lv}, stopping training", flush=True)
            sys.exit(1)
    out("training finished")
    if distributed:
        dist.barrier(); dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
