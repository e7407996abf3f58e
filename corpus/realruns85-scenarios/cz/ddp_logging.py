"""DDP trainer on a tiny MLP that logs through user-configured Python logging formatters.

--fmt    rankfmt | epoch | json | ansi      (how records are rendered)
--fault  none | oom | shard_dim | missing_shard | nan_shard | slow_eval | skip_barrier |
         metric_desync | resume_mismatch | unused_branch | pidfile
--rank / --step select where the fault lives.
"""
import argparse, datetime, json, logging, math, os, socket, sys, time, traceback, warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fmt", default="rankfmt")
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--data-dir", default="/work/rr85/cz/data/shards")
p.add_argument("--ckpt", default="")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noisy", action="store_true")
args = p.parse_args()

RANK = int(os.environ.get("RANK", 0))
WORLD = int(os.environ.get("WORLD_SIZE", 1))
HOST = socket.gethostname()


class RankFilter(logging.Filter):
    def filter(self, record):
        record.rank = RANK
        record.world = WORLD
        record.hostname = HOST
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record):
        out = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc).isoformat(timespec="milliseconds"),
            "severity": record.levelname,
            "logger": record.name,
            "rank": record.rank,
            "host": record.hostname,
            "pid": record.process,
            "src": f"{record.module}:{record.lineno}",
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out)


class AnsiFormatter(logging.Formatter):
    COL = {"DEBUG": "\x1b[36m", "INFO": "\x1b[32m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m", "CRITICAL": "\x1b[1;41m"}

    def format(self, record):
        s = super().format(record)
        c = self.COL.get(record.levelname, "")
        return s.replace(f"[{record.levelname}]", f"[{c}{record.levelname}\x1b[0m]", 1)


def setup_logging():
    h = logging.StreamHandler(sys.stdout)
    h.addFilter(RankFilter())
    if args.fmt == "rankfmt":
        h.setFormatter(logging.Formatter(
            "%(asctime)s.%(msecs)03d [%(levelname)s] [rank %(rank)d/%(world)d] %(hostname)s pid=%(process)d %(module)s:%(lineno)d - %(message)s",
            datefmt="%Y-%m-%dT%H:%M:%S"))
    elif args.fmt == "epoch":
        h.setFormatter(logging.Formatter("%(created).3f %(levelname)-8s r%(rank)d %(name)s:%(lineno)d | %(message)s"))
    elif args.fmt == "json":
        h.setFormatter(JsonFormatter())
    elif args.fmt == "ansi":
        h.setFormatter(AnsiFormatter("\x1b[2m%(asctime)s\x1b[0m [%(levelname)s] \x1b[35m[r%(rank)d]\x1b[0m %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [h]
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    if args.fmt == "json":
        # structured logs only: route uncaught exceptions through the JSON formatter as well
        def hook(et, ev, tb):
            logging.getLogger("trainer").critical("uncaught exception", exc_info=(et, ev, tb))
        sys.excepthook = hook
    return logging.getLogger("trainer")


log = setup_logging()


class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_cls=4, aux=False):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_cls)
        self.aux = nn.Linear(hidden, n_cls) if aux else None

    def forward(self, x, use_aux=False):
        h = F.relu(self.fc1(x))
        if use_aux and self.aux is not None:
            return self.aux(h)
        return self.fc2(h)


def load_shard(rank):
    path = os.path.join(args.data_dir, f"shard-{rank:05d}.pt")
    log.info("loading training shard %s", path)
    return torch.load(path)


def evaluate(model):
    # full validation pass (slow on CPU); only done on rank 0
    t0 = time.time()
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(4096, 16, generator=g)
    with torch.no_grad():
        n = 0
        while time.time() - t0 < 45:
            model.module(xs).argmax(1).sum()
            n += 1
    return n


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    log.info("process group up: backend=%s world_size=%d", dist.get_backend(), WORLD)
    torch.manual_seed(0)
    model = MLP(hidden=args.hidden, aux=(args.fault == "unused_branch"))
    if args.ckpt:
        log.info("resuming from %s", args.ckpt)
        sd = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(sd["model"])
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    shard = load_shard(RANK)
    X, Y = shard["x"], shard["y"]
    log.info("shard has %d samples, %d features", X.shape[0], X.shape[1])
    if RANK == 0:
        warnings.warn("torch.backends.cudnn not available; running on CPU, this will be slow", RuntimeWarning)
    if args.fault == "pidfile" and RANK == args.rank:
        with open(f"/work/rr85/cz/tmp/worker-{RANK}.pid", "w") as f:
            f.write(str(os.getpid()))
    it = range(args.steps)
    if args.tqdm and RANK == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stderr, mininterval=0, ncols=90)
    for step in it:
        i = (step * args.batch) % X.shape[0]
        xb, yb = X[i:i + args.batch], Y[i:i + args.batch]
        if args.fault == "oom" and RANK == args.rank and step == args.step:
            # activation cache for "long context" augmentation, sized from the batch
            log.info("enabling feature cache for step %d (batch=%d)", step, args.batch)
            cache = torch.empty(args.batch * 2048, 8192 * 16)
            cache.zero_()
        out = ddp(xb, use_aux=(args.fault == "unused_branch" and step % 2 == 1))
        loss = F.cross_entropy(out, yb)
        if not math.isfinite(loss.item()):
            log.error("Loss is %s at step %d, stopping training", loss.item(), step)
            sys.exit(1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            gn = sum(p.grad.norm() ** 2 for p in ddp.parameters() if p.grad is not None) ** 0.5
            log.info("step=%d loss=%.4f grad_norm=%.3f lr=%.3g", step, loss.item(), gn, opt.param_groups[0]["lr"])
            if gn > 1.0:
                log.warning("grad_norm %.2f above clip threshold 1.0 at step %d", gn, step)
        if args.fault == "metric_desync" and step >= args.step:
            # average the step metrics over ranks; the logging rank also tracks its lr
            acc = (out.detach().argmax(1) == yb).float().mean()
            vals = [loss.detach(), acc] + ([torch.tensor(opt.param_groups[0]["lr"])] if RANK == args.rank else [])
            metrics = torch.stack(vals)
            dist.all_reduce(metrics)
            metrics /= WORLD
            log.info("metrics: loss=%.4f acc=%.3f", metrics[0].item(), metrics[1].item())
        if args.fault == "logging_bug" and step % 5 == 4:
            log.info("epoch %d/%d: consumed %d samples", step // 5)
        if args.noisy and RANK == 0 and step % 6 == 3:
            import urllib.request
            try:
                urllib.request.urlopen("http://127.0.0.1:37549/metrics/job/train", data=b"loss 1", timeout=1)
            except Exception:
                log.error("pushgateway push failed for step %d, will retry next interval", step, exc_info=True)
        if args.fault == "skip_barrier" and step == args.step:
            # ranks that produced a checkpoint sync before the next epoch
            if RANK != args.rank:
                log.info("waiting for all ranks at checkpoint barrier")
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=15))
        if args.fault == "slow_eval" and step == args.step and RANK == args.rank:
            log.info("running validation at step %d", step)
            n = evaluate(ddp)
            log.info("validation done (%d passes)", n)
        time.sleep(0.2)
    dist.barrier()
    log.info("training finished after %d steps", args.steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.fmt == "json":
        main()
    else:
        try:
            main()
        except Exception:
            log.exception("rank %d: training loop crashed", RANK)
            raise
