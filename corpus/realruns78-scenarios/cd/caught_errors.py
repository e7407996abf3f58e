"""DDP classifier training whose code catches and logs errors (metrics, evaluation, exporters),
with optional deprecation noise and resume from a checkpoint.

Runs under torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
"""
import argparse, logging, os, socket, sys, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "metric_exc", "eval_handled", "eval_desync", "lib_errors", "deprecations",
                        "resume_pickled"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--eval-every", type=int, default=4)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=36150)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--ckpt", default="/tmp/rr78cd_ce/last.pt")
args = p.parse_args()

NCLS = 5


class MetricsExporter:
    """Tiny push-gateway client; failures are logged by the library and swallowed."""
    def __init__(self, host="127.0.0.1", port=36198):
        self.addr = (host, port); self.log = logging.getLogger("metrics_exporter.client")

    def push(self, **kv):
        try:
            with socket.create_connection(self.addr, timeout=1) as s:
                s.sendall(repr(kv).encode())
        except OSError as e:
            self.log.error("failed to push metrics to http://%s:%d/metrics/job/train: %s", *self.addr, e)


def per_class_f1(pred, target):
    # bug: only classes seen in target get an entry, macro-average then indexes all classes
    stats = {}
    for c in target.unique().tolist():
        tp = ((pred == c) & (target == c)).sum().item()
        fp = ((pred == c) & (target != c)).sum().item()
        fn = ((pred != c) & (target == c)).sum().item()
        stats[c] = 2 * tp / max(2 * tp + fp + fn, 1)
    return sum(stats[c] for c in range(NCLS)) / NCLS


def evaluate(model, rank, world, log):
    g = torch.Generator().manual_seed(123)
    n_eval = {"eval_desync": 71, "eval_handled": 70}.get(args.fault, 64)
    X = torch.randn(n_eval, 32, generator=g); Y = torch.randint(0, NCLS, (n_eval,), generator=g)
    # shard: eval_desync gives the last rank the remainder
    idx = list(range(rank, n_eval, world)) if args.fault != "eval_desync" else \
        list(range(rank * 32, min((rank + 1) * 32, n_eval) if rank < world - 1 else n_eval))
    Xs, Ys = X[idx], Y[idx]
    bs = 16
    correct = torch.zeros(1); total = torch.zeros(1); lsum = torch.zeros(1)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(Xs), bs):
            logits = model(Xs[i:i + bs]).view(bs, NCLS)  # assumes full batches
            lsum += nn.functional.cross_entropy(logits, Ys[i:i + bs], reduction="sum")
            correct += (logits.argmax(-1) == Ys[i:i + bs]).sum(); total += len(logits)
    model.train()
    return torch.cat([lsum, correct, total])


def main(rank, world):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s | %(levelname)-7s | rank{rank} | %(name)s | %(message)s")
    log = logging.getLogger("trainer")
    if args.fault == "deprecations":
        warnings.simplefilter("always")
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, NCLS)), find_unused_parameters=args.find_unused)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    scaler = None
    if args.fault in ("deprecations", "resume_pickled"):
        scaler = torch.cuda.amp.GradScaler()  # config written for GPU nodes
    start = 0
    if args.fault == "resume_pickled":
        if rank == 0 and not os.path.exists(args.ckpt):
            os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
            # checkpoint written by the previous job (older trainer): stores the argparse namespace
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": 8,
                        "args": args}, args.ckpt)
        dist.barrier()
        for i in range(3):
            with torch.cuda.amp.autocast():
                model(torch.randn(4, 32))
        log.info("resuming from %s", args.ckpt)
        ck = torch.load(args.ckpt, map_location="cpu")
        model.module.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"]); start = ck["step"]
    exporter = MetricsExporter() if args.fault == "lib_errors" else None
    g = torch.Generator().manual_seed(rank)
    it = range(start, args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    for step in it:
        x = torch.randn(32, 32, generator=g); y = torch.randint(0, NCLS, (32,), generator=g)
        if args.fault == "deprecations":
            with torch.cuda.amp.autocast(enabled=True):
                out = model(x)
            if step == start:
                sched.step()  # warm-up hook calls scheduler before the first optimizer step
        else:
            out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step(); sched.step()
        with torch.no_grad():
            pred = out.argmax(-1)
            try:
                f1 = per_class_f1(pred[:8], y[:8]) if args.fault == "metric_exc" and rank == args.fault_rank \
                    and step == args.fault_step else float("nan")
            except Exception:
                log.exception("could not compute macro-F1 at step %d, logging NaN and continuing", step)
                f1 = float("nan")
        l = loss.detach().clone(); dist.all_reduce(l); l /= world
        if exporter:
            exporter.push(step=step, loss=l.item())
        if rank == 0 and not args.tqdm:
            log.info("step=%d loss=%.4f lr=%.4f", step, l.item(), sched.get_last_lr()[0])
        if (step + 1) % args.eval_every == 0:
            try:
                m = evaluate(model.module, rank, world, log)
            except Exception:
                log.exception("evaluation at step %d failed; skipping this round", step + 1)
                if args.fault == "eval_desync":
                    continue
                m = torch.zeros(3)
            dist.all_reduce(m)
            if rank == 0:
                log.info("eval step=%d loss=%.4f acc=%.3f (n=%d)", step + 1, (m[0] / m[2].clamp(min=1)).item(),
                         (m[1] / m[2].clamp(min=1)).item(), int(m[2]))
    dist.barrier()
    if rank == 0:
        log.info("done, final loss %.4f", l.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
