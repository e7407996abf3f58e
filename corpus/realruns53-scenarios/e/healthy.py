"""Healthy-but-noisy DDP training runs. --mode selects the kind of alarming noise."""
import argparse, os, sys, time, math, logging, warnings, json, signal
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--mode", default="plain")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--rank-noise", type=int, default=1)
p.add_argument("--out", default="/work/rr53/e/tmp/out")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29710)
p.add_argument("--destroy", type=int, default=1)
args = p.parse_args()

def setup_logging(rank):
    logging.basicConfig(level=logging.INFO,
        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    return logging.getLogger("train")

class Net(nn.Module):
    def __init__(self, extra=False):
        super().__init__()
        self.l1 = nn.Linear(16, 32); self.l2 = nn.Linear(32, 4)
        self.aux = nn.Linear(32, 4) if extra else None
    def forward(self, x):
        h = torch.relu(self.l1(x))
        return self.l2(h)

def run(rank, world):
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    log = setup_logging(rank)
    torch.manual_seed(0)
    X = torch.randn(512, 16); Y = (X[:, :4].argmax(1))
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    nw = 0
    if args.mode == "deprec":
        nw = 3  # more workers than the machine suggests
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=nw)
    model = Net(extra=(args.mode == "unused"))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=(args.mode in ("unused", "debuginfo")))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    if args.mode == "deprec":
        scaler = torch.cuda.amp.GradScaler(enabled=False)
        sched.step()  # called before optimizer.step(): PyTorch warns
        warnings.warn("`evaluation_strategy` is deprecated and will be removed in version 4.46 of this script; use `eval_strategy` instead", FutureWarning)
        np.seterr(all="warn")
    if args.mode == "optional" and rank == args.rank_noise:
        try:
            cw = torch.load(os.path.join(args.out, "class_weights.pt"))
        except FileNotFoundError:
            log.exception("optional class weights could not be loaded; continuing with uniform weights")
            cw = None
    if args.mode == "retry":
        # rank 0 writes a shared label map; others read it and retry until it shows up
        path = os.path.join(args.out, f"labelmap_{os.getpid() if world==1 else 'shared'}.json")
        if rank == 0:
            time.sleep(2.0)
            os.makedirs(args.out, exist_ok=True)
            with open(path + ".tmp", "w") as f: json.dump({"0": "a", "1": "b", "2": "c", "3": "d"}, f)
            os.replace(path + ".tmp", path)
        else:
            for attempt in range(1, 10):
                try:
                    with open(path) as f: lm = json.load(f)
                    log.info("label map loaded on attempt %d", attempt); break
                except FileNotFoundError:
                    log.warning("attempt %d/9 to read label map failed, retrying in 1s", attempt, exc_info=True)
                    time.sleep(1.0)
    if args.mode == "elastic":
        # rank 0 builds the vocab cache; rank 1 reads it without waiting (race on first attempt only)
        vpath = os.path.join(args.out, "vocab_cache.json")
        if rank == 0 and not os.path.exists(vpath):
            time.sleep(3.0); os.makedirs(args.out, exist_ok=True)
            with open(vpath, "w") as f: json.dump({"n": 4}, f)
        elif rank == 1:
            with open(vpath) as f: vocab = json.load(f)
            log.info("vocab cache loaded: %s", vocab)
    lossf = nn.CrossEntropyLoss()
    step = 0
    try:
        for epoch in range(100):
            if sampler: sampler.set_epoch(epoch)
            for xb, yb in dl:
                out = model(xb)
                loss = lossf(out, yb)
                opt.zero_grad(); loss.backward(); opt.step()
                step += 1
                if args.mode == "logerr" and rank == args.rank_noise and step % 10 == 0:
                    # bad format string: logging prints '--- Logging error ---' and carries on
                    log.info("step %d loss %.4f lr %.4f", step, loss.item())
                elif step % 5 == 0:
                    log.info("epoch %d step %d loss %.4f lr %.4g", epoch, step, loss.item(), opt.param_groups[0]["lr"])
                if args.mode == "sigint" and step == 12 and rank == 0:
                    os.kill(os.getpid(), signal.SIGINT)
                if args.mode == "sigint": time.sleep(0.05)
                if args.mode == "saveretry" and rank == 0 and step == 15:
                    path = os.path.join(args.out, "ckpt", f"step{step}.pt")
                    for attempt in (1, 2):
                        try:
                            torch.save({"model": model.state_dict(), "step": step}, path)
                            log.info("checkpoint saved to %s (attempt %d)", path, attempt); break
                        except RuntimeError:
                            log.exception("checkpoint save failed (attempt %d); creating parent dir and retrying", attempt)
                            os.makedirs(os.path.dirname(path), exist_ok=True)
                if step >= args.steps: break
            sched.step()
            if step >= args.steps: break
    except KeyboardInterrupt:
        log.warning("KeyboardInterrupt received at step %d: saving checkpoint and exiting cleanly", step)
        os.makedirs(args.out, exist_ok=True)
        torch.save({"model": model.state_dict(), "step": step}, os.path.join(args.out, "interrupt.pt"))
        log.info("saved %s", os.path.join(args.out, "interrupt.pt"))
        return
    # evaluation
    with torch.no_grad():
        m = model.module if world > 1 else model
        pred = m(X[:64]).argmax(1)
        tgt = Y[:64].numpy(); pr = pred.numpy()
        metrics = {"acc": float((pr == tgt).mean())}
        if args.mode == "evalnan":
            # per-class precision; class 3 never predicted -> 0/0
            for c in range(4):
                tp = np.sum((pr == c) & (tgt == c)); pp = np.sum(pr == c)
                metrics[f"prec_c{c}"] = float(np.float64(tp) / np.float64(pp)) if c != 3 else float(np.float64(0) / np.float64(0))
            metrics["macro_prec"] = float(np.mean([metrics[f"prec_c{c}"] for c in range(4)]))
        log.info("eval: %s", json.dumps(metrics))
    if world > 1:
        dist.barrier()
        if args.destroy: dist.destroy_process_group()
    log.info("training finished after %d steps", step)

def spawn_main(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
