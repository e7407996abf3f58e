"""Tiny DDP/single-process trainer with structured logging (json / structlog / loguru / logfmt / plain).

flags: --fmt, --fault, --frank (rank that misbehaves), --fstep (step at which), --steps, --ckpt, --outdir
"""
import argparse, logging, os, sys, time, math, warnings, json
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--fmt", default="plain", choices=["pyjson", "structlog", "loguru", "logfmt", "plain"])
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=0)
p.add_argument("--fstep", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--ckpt", default="")
p.add_argument("--outdir", default="")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--reraise", action="store_true")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))

# ---------------- logging setup ----------------
class _RankFilter(logging.Filter):
    def filter(self, record):
        record.rank = RANK
        return True

if args.fmt == "pyjson":
    from pythonjsonlogger.json import JsonFormatter
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(rank)s %(message)s",
                                 rename_fields={"levelname": "level", "asctime": "ts"}))
    h.addFilter(_RankFilter())
    logging.basicConfig(level=logging.INFO, handlers=[h])
    logging.captureWarnings(True)
    _lg = logging.getLogger("trainer")
    def log(level, msg, **kw):
        _lg.log(getattr(logging, level.upper()), msg, extra=kw)
    def log_exc(msg, **kw):
        _lg.exception(msg, extra=kw)
elif args.fmt == "structlog":
    import structlog
    structlog.configure(processors=[
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(),
    ], logger_factory=structlog.PrintLoggerFactory(sys.stdout))
    _lg = structlog.get_logger("trainer").bind(rank=RANK, world_size=WORLD)
    def _showwarning(message, category, filename, lineno, file=None, line=None):
        _lg.warning(str(message), category=category.__name__, filename=filename, lineno=lineno)
    warnings.showwarning = _showwarning
    def log(level, msg, **kw):
        getattr(_lg, level)(msg, **kw)
    def log_exc(msg, **kw):
        _lg.exception(msg, **kw)
elif args.fmt == "loguru":
    from loguru import logger as _lg
    _lg.remove()
    _lg.add(sys.stderr, serialize=True, level="INFO", backtrace=False, diagnose=False)
    _lg = _lg.bind(rank=RANK)
    def _showwarning(message, category, filename, lineno, file=None, line=None):
        _lg.warning("{}: {} ({}:{})", category.__name__, message, filename, lineno)
    warnings.showwarning = _showwarning
    def log(level, msg, **kw):
        _lg.bind(**kw).log(level.upper(), msg)
    def log_exc(msg, **kw):
        _lg.bind(**kw).exception(msg)
elif args.fmt == "logfmt":
    class LogfmtFormatter(logging.Formatter):
        def format(self, record):
            def q(v):
                v = str(v)
                if any(c in v for c in ' ="\n\t') or v == "":
                    v = '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
                return v
            parts = [f"time={self.formatTime(record, '%Y-%m-%dT%H:%M:%S')}", f"level={record.levelname.lower()}",
                     f"logger={record.name}", f"rank={RANK}", f"msg={q(record.getMessage())}"]
            for k, v in getattr(record, "kv", {}).items():
                parts.append(f"{k}={q(v)}")
            if record.exc_info:
                parts.append(f"error={q(repr(record.exc_info[1]))}")
                parts.append(f"stacktrace={q(self.formatException(record.exc_info))}")
            return " ".join(parts)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(LogfmtFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[h])
    logging.captureWarnings(True)
    _lg = logging.getLogger("trainer")
    def log(level, msg, **kw):
        _lg.log(getattr(logging, level.upper()), msg, extra={"kv": kw})
    def log_exc(msg, **kw):
        _lg.exception(msg, extra={"kv": kw})
else:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{RANK}] %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
    _lg = logging.getLogger("trainer")
    def log(level, msg, **kw):
        s = " ".join(f"{k}={v}" for k, v in kw.items())
        _lg.log(getattr(logging, level.upper()), msg + ((" " + s) if s else ""))
    def log_exc(msg, **kw):
        _lg.exception(msg)

# ---------------- data / model ----------------
VOCAB, D, SEQ = 50, 32, 8

class Records(torch.utils.data.Dataset):
    """Records parsed from text lines 'tok tok tok ...|label'."""
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.lines = []
        for i in range(n):
            L = SEQ if args.fault != "collate" else SEQ + (i % 3)
            toks = torch.randint(0, VOCAB, (L,), generator=g).tolist()
            self.lines.append(" ".join(map(str, toks)) + "|" + str(i % 4))
        if args.fault == "badrecord":
            self.lines[37] = "12 7 33 41 9 n/a 3 18|2"
        if args.fault == "embed":
            # vocab built with a later tokenizer: ids up to VOCAB+8
            for i in range(0, n, 5):
                self.lines[i] = " ".join(str(VOCAB + (j % 9)) for j in range(SEQ)) + "|1"
    def __len__(self):
        return len(self.lines)
    def __getitem__(self, i):
        toks, lab = self.lines[i].split("|")
        return {"input_ids": torch.tensor([int(t) for t in toks.split()]), "labels": torch.tensor(int(lab))}

class Net(nn.Module):
    def __init__(self, d=D, aux=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.body = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.head = nn.Linear(d, 4)
        self.aux_head = nn.Linear(d, 4) if aux else None
    def forward(self, ids, use_aux=False):
        h = self.emb(ids).mean(1)
        h = self.body(h)
        if use_aux and self.aux_head is not None:
            return self.aux_head(h)
        return self.head(h)

def main():
    if WORLD > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        log("info", "process group initialized", backend="gloo", world_size=WORLD)
    torch.manual_seed(0)
    d = D
    if args.fault == "modelmismatch" and RANK == args.frank:
        d = D + 16
    model = Net(d, aux=(args.fault == "unused"))
    if args.ckpt and args.fault != "savebad":
        log("info", "resuming from checkpoint", path=args.ckpt)
        sd = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(sd["model"])
    if WORLD > 1:
        model = nn.parallel.DistributedDataParallel(model)
    ds = Records()
    sampler = torch.utils.data.distributed.DistributedSampler(ds) if WORLD > 1 else None
    dl = torch.utils.data.DataLoader(ds, batch_size=8, sampler=sampler, shuffle=sampler is None,
                                     num_workers=args.workers)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    if args.fault == "none":
        # noisy-but-harmless: scheduler stepped before optimizer, deprecated API
        sched.step()
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.", UserWarning)
    step = 0
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{RANK}", file=sys.stderr, mininterval=0)
    for ep in it:
        if sampler is not None:
            sampler.set_epoch(ep)
        for batch in dl:
            ids, y = batch["input_ids"], batch["labels"]
            bad = RANK == args.frank and step == args.fstep
            if args.fault == "shape" and bad:
                ids = ids[:, : SEQ // 2].reshape(-1, SEQ // 2)
                h = model.module.emb(ids) if WORLD > 1 else model.emb(ids)
                h = h.reshape(h.shape[0], -1)  # flattened features instead of mean-pooled
                out = (model.module if WORLD > 1 else model).body(h)
            elif args.fault == "dtype" and bad:
                feats = torch.from_numpy((ids.numpy() / VOCAB).astype("float64"))
                out = model.module.body(feats.repeat(1, D // SEQ)) if WORLD > 1 else model.body(feats.repeat(1, D // SEQ))
            elif args.fault == "unused":
                out = model(ids, use_aux=False)
            else:
                out = model(ids)
            if args.fault == "whiten" and step >= args.fstep:
                # ZCA-style feature whitening of the pooled embeddings (per-batch covariance)
                emb = (model.module if WORLD > 1 else model).emb(ids).mean(1).detach()
                cov = (emb - emb.mean(0)).T @ (emb - emb.mean(0)) / (emb.shape[0] - 1)
                L = torch.linalg.cholesky(cov)
                log("info", "whitening factor", cond=float(torch.linalg.cond(L)))
            if args.fault == "target" and bad:
                loss = F.cross_entropy(out, F.one_hot(y, 5).float())
            else:
                loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            if args.fault == "backward2" and bad:
                loss.backward()
            if args.fault == "nan" and not torch.isfinite(loss):
                log("error", "non-finite loss, stopping", step=step, loss=float(loss))
                raise SystemExit(3)
            opt.step()
            if args.fault == "oom" and bad:
                # gather activations of the whole epoch for an analysis buffer
                buf = torch.empty((len(ds) * 4096, 4096), dtype=torch.float32)
            if args.fault == "kill" and bad:
                os.kill(os.getpid(), 9)
            if step % 2 == 0:
                gn = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None))
                log("info", "train step", step=step, epoch=ep, loss=round(float(loss), 4), grad_norm=round(gn, 3),
                    lr=sched.get_last_lr()[0])
            step += 1
        sched.step()
        if args.outdir and RANK == 0:
            os.makedirs(args.outdir, exist_ok=True)
            path = os.path.join(args.outdir, f"epoch{ep}.pt")
            import io
            buf = io.BytesIO()
            torch.save({"model": (model.module if WORLD > 1 else model).state_dict(), "epoch": ep}, buf)
            with open(path, "wb") as f:
                f.write(buf.getvalue())
            log("info", "checkpoint saved", path=path)
    if WORLD > 1:
        dist.barrier()
    log("info", "training finished", steps=step)
    if WORLD > 1:
        dist.destroy_process_group()

if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:
        log_exc("training failed")
        if args.reraise:
            raise
        sys.exit(1)
