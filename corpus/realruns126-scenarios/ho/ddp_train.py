"""Small DDP classifier trainer with several logging setups.

Launch with torchrun (or --spawn N for torch.multiprocessing.spawn, or plain python for 1 process).
Faults come from the data (see make_shards.py), the environment, or the options below.
"""
import argparse
import json
import logging
import os
import socket
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def parse():
    p = argparse.ArgumentParser("ddp_train.py")
    p.add_argument("--data", required=True)
    p.add_argument("--out", default="out")
    p.add_argument("--logfmt", default="plain", choices=["plain", "prefix", "json", "structlog", "structlog-console", "loguru", "bare"])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-mode", default="mean", choices=["mean", "pairwise"])
    p.add_argument("--resume", default="")
    p.add_argument("--loader", default="files", choices=["files", "dataloader"])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--log-transform", action="store_true")
    p.add_argument("--aux-weight", type=float, default=0.5)
    p.add_argument("--barrier-before-save", action="store_true")
    p.add_argument("--lock-file", default="")
    p.add_argument("--run-name", default="")
    p.add_argument("--save-fileobj", action="store_true")
    p.add_argument("--progress", action="store_true", help="tqdm bar on every rank")
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--noisy", action="store_true", help="emit the usual deprecation noise")
    p.add_argument("--peek-encoder", action="store_true")
    p.add_argument("--pidfile", default="")
    p.add_argument("--mem-cap-rank", type=int, default=-1)
    p.add_argument("--mem-cap-gb", type=float, default=0)
    p.add_argument("--log-exc", action="store_true")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--name-from-config", action="store_true")
    p.add_argument("--class-stats-every", type=int, default=0)
    return p.parse_args()


def make_logger(fmt, rank, world):
    host = socket.gethostname().split(".")[0]
    if fmt == "loguru":
        from loguru import logger
        logger.remove()
        logger.add(sys.stderr)  # default format; rank only in extra
        return logger.bind(rank=rank, world=world)
    if fmt == "structlog-console":
        import structlog
        structlog.configure(processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S"),
            structlog.dev.ConsoleRenderer()])
        return structlog.get_logger("trainer").bind(rank=rank)
    if fmt == "structlog":
        import structlog
        structlog.configure(processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer()],
            logger_factory=structlog.PrintLoggerFactory(sys.stdout))
        return structlog.get_logger("trainer").bind(rank=rank, host=host)
    log = logging.getLogger("trainer")
    h = logging.StreamHandler(sys.stdout)
    if fmt == "json":
        from pythonjsonlogger.json import JsonFormatter
        h.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                     static_fields={"rank": rank, "host": host}))
    elif fmt == "prefix":
        h.setFormatter(logging.Formatter(f"%(asctime)s {host} [rank{rank}] %(levelname)s %(name)s: %(message)s"))
    elif fmt == "bare":
        h.setFormatter(logging.Formatter("%(message)s"))
    else:
        h.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s"))
    log.addHandler(h)
    log.setLevel(logging.INFO)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(h)
    return log


class Net(nn.Module):
    def __init__(self, feat, hidden, depth, n_cls=4):
        super().__init__()
        layers = [nn.Linear(feat, hidden), nn.GELU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.GELU()]
        self.encoder = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, n_cls)
        self.aux_head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.encoder(x)
        return self.head(h), self.aux_head(h).squeeze(-1)


class DirShard:
    """Shard stored as one .npy per row (the exporter's 'dir' format)."""
    _open = {}

    def __init__(self, path):
        self.path = path
        self.rows = sorted(os.listdir(path))

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        fn = os.path.join(self.path, self.rows[i])
        fh = DirShard._open.get(fn)
        if fh is None:
            fh = open(fn, "rb")  # cached so the next epoch is fast
            DirShard._open[fn] = fh
        fh.seek(0)
        return np.load(fh)


def load_shard(path):
    if os.path.isdir(path):
        d = DirShard(path)
        x = np.stack([d[i] for i in range(len(d))])
        y = np.load(path + "_y.npy")
        return x, y, None
    x = np.load(path)
    y = np.load(path.replace("_x.npy", "_y.npy"))
    lab = np.load(path.replace("_x.npy", "_lab.npy"))
    return x, y, lab


class RowDataset(torch.utils.data.Dataset):
    CLASSES = {"cat": 0, "dog": 1, "bird": 2, "fish": 3}

    def __init__(self, files):
        self.items = []
        for f in files:
            x, y, lab = load_shard(f)
            for i in range(len(x)):
                self.items.append((x[i], lab[i] if lab is not None else None))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x, lab = self.items[i]
        return torch.from_numpy(x), self.CLASSES[str(lab)]


def file_batches(files, bs):
    for f in files:
        x, y, _ = load_shard(f)
        for i in range(0, len(x) - bs + 1, bs):
            yield torch.from_numpy(x[i:i + bs]), torch.from_numpy(y[i:i + bs])


def main_worker(rank_arg, args):
    try:
        _main_worker(rank_arg, args)
    except Exception:
        if args.log_exc:
            _LOG[0].exception("training failed")
        raise


_LOG = [None]


def _main_worker(rank_arg, args):
    if args.spawn:
        os.environ["RANK"] = str(rank_arg)
        os.environ["LOCAL_RANK"] = str(rank_arg)
        os.environ["WORLD_SIZE"] = str(args.spawn)
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    log = make_logger(args.logfmt, rank, world)
    _LOG[0] = log
    if args.pidfile:
        with open(f"{args.pidfile}.{rank}", "w") as f:
            f.write(str(os.getpid()))
    if args.mem_cap_rank == rank and args.mem_cap_gb > 0:
        import resource
        lim = int(args.mem_cap_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    log.info(f"process group ready: rank {rank}/{world} backend={'gloo' if distributed else 'none'} pid={os.getpid()}")
    torch.manual_seed(0)
    with open(os.path.join(args.data, "manifest.json")) as f:
        manifest = json.load(f)
    files = manifest[str(rank)]
    feat = 32
    model = Net(feat, args.hidden, args.depth)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    start_step = 0
    if args.resume:
        log.info(f"resuming from {args.resume}")
        state = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        start_step = state["step"]
        log.info(f"resumed at step {start_step}")
    if args.noisy:
        scaler = torch.cuda.amp.GradScaler()  # left over from the GPU config
    if distributed:
        ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    else:
        ddp = model
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup_steps))
    if args.noisy:
        for _ in range(start_step):
            sched.step()  # fast-forward the schedule on resume
        sched.step()
    if args.loader == "dataloader":
        ds = RowDataset(files)
        dl = torch.utils.data.DataLoader(ds, batch_size=args.bs, shuffle=args.shuffle, num_workers=args.workers)
        def batches():
            for x, y in dl:
                yield x, y
    else:
        def batches():
            return file_batches(files, args.bs)
    bar = None
    if args.progress:
        from tqdm import tqdm
        bar = tqdm(total=len(files) * 256 // args.bs * args.epochs, desc=f"rank{rank} train", file=sys.stderr,
                   mininterval=0, position=0)
    os.makedirs(args.out, exist_ok=True)
    if args.name_from_config:
        # encode the full config in the run name so checkpoints are self-describing
        cfg = dict(vars(args), data=os.path.abspath(args.data), out=os.path.abspath(args.out))
        args.run_name = "_".join(f"{k}={v}" for k, v in sorted(cfg.items())
                                 if v not in (None, "", False) and k != "run_name").replace("/", "-")
        log.info(f"run name: {args.run_name}")
    step = start_step
    t0 = time.time()
    for epoch in range(args.epochs):
        for x, y in batches():
            if args.log_transform:
                x = torch.log(x)
            logits, aux = ddp(x)
            loss = F.cross_entropy(logits, y)
            if args.aux_weight > 0:
                loss = loss + args.aux_weight * F.mse_loss(aux, x.mean(-1))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"Non-finite loss {loss.item()} at step {step} (epoch {epoch}); aborting")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
            if args.step_sleep:
                time.sleep(args.step_sleep)
            if step % args.log_every == 0:
                msg = f"epoch={epoch} step={step} loss={loss.item():.4f} grad_norm={gn.item():.3f} lr={sched.get_last_lr()[0]:.2e} samples/s={step * args.bs / (time.time() - t0):.0f}"
                if args.logfmt in ("json", "structlog", "structlog-console"):
                    if args.logfmt.startswith("structlog"):
                        log.info("train_step", epoch=epoch, step=step, loss=round(loss.item(), 4), grad_norm=round(gn.item(), 3))
                    else:
                        log.info("train_step", extra={"epoch": epoch, "step": step, "loss": round(loss.item(), 4), "grad_norm": round(gn.item(), 3)})
                else:
                    log.info(msg)
                if gn.item() > 0.9 and not args.logfmt.startswith("structlog"):
                    log.warning(f"gradient norm {gn.item():.3f} clipped to 1.0 at step {step}")
                if args.peek_encoder and rank == 0:
                    w = ddp.encoder[0].weight
                    log.info(f"encoder[0] weight norm {w.norm():.3f}")
            if args.class_stats_every and step % args.class_stats_every == 0:
                hist = torch.bincount(y).float()  # label histogram of this batch window
                if distributed:
                    dist.all_reduce(hist)
                log.info(f"class histogram step={step}: {hist.tolist()}")
            if args.eval_every and step % args.eval_every == 0:
                ev = torch.from_numpy(np.load(os.path.join(args.data, f"eval_rank{rank}.npy")))
                with torch.no_grad():
                    emb = model.encoder(ev)
                    if args.eval_mode == "pairwise":
                        # retrieval-style diversity metric: mean pairwise distance of eval embeddings
                        d = torch.cdist(emb, emb)
                        score = d.mean()
                    else:
                        score = emb.norm(dim=-1).mean()
                t = torch.tensor([score.item()])
                if distributed:
                    dist.all_reduce(t)
                    t /= world
                log.info(f"eval step={step} embedding_score={t.item():.4f}")
            if args.save_every and step % args.save_every == 0:
                if args.barrier_before_save and distributed:
                    if args.lock_file and rank == 1 + (world > 2):
                        log.info(f"waiting for lock {args.lock_file} before touching shared checkpoint dir")
                        while os.path.exists(args.lock_file):
                            time.sleep(1)
                    dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)
                if rank == 0:
                    name = f"{args.run_name}_step{step}.pt" if args.run_name else f"step{step}.pt"
                    path = os.path.join(args.out, name)
                    state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step}
                    if args.save_fileobj:
                        with open(path, "wb") as fh:
                            torch.save(state, fh)
                    else:
                        torch.save(state, path)
                    log.info(f"saved checkpoint {path}")
                if distributed:
                    dist.barrier()
    if bar is not None:
        bar.close()
    log.info(f"training finished: {step} steps in {time.time() - t0:.1f}s, final loss {loss.item():.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


def main():
    args = parse()
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "46117")
        torch.multiprocessing.spawn(main_worker, args=(args,), nprocs=args.spawn)
    else:
        main_worker(0, args)


if __name__ == "__main__":
    if os.environ.get("USE_RECORD"):
        from torch.distributed.elastic.multiprocessing.errors import record
        main = record(main)
    main()
