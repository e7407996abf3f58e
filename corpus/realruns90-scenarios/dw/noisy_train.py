"""Tiny DDP (gloo, CPU) training loop with optional alarming-but-harmless noise and optional real faults.

Launch with torchrun (env://), with --spawn N (torch.multiprocessing.spawn), or plain python (single process).
"""
import argparse, faulthandler, json, logging, math, os, socket, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--noise", default="")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=12)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=39210)
p.add_argument("--workdir", default="/tmp/rr90dw_work")
p.add_argument("--config", default="")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--ts", action="store_true", help="logging with timestamps")
p.add_argument("--vocab", type=int, default=64)
args = p.parse_args()
NOISE = set(x for x in args.noise.split(",") if x)


import threading
METRIC_LOCK = threading.Lock()
_pending = []


def flush_metrics(log):
    with METRIC_LOCK:
        n = len(_pending)
        _pending.clear()
    log.info("flushed %d metric points", n)


def record_metric(log, name, value, flush=False):
    with METRIC_LOCK:
        _pending.append((name, value))
        if flush:
            flush_metrics(log)  # re-acquires the non-reentrant lock -> deadlock


class Ticket:
    """Holds a handle to the metrics socket; its __del__ runs late at interpreter shutdown."""
    def __init__(self, sock):
        self.sock = sock
    def __del__(self):
        self.sock.shutdown(socket.SHUT_RDWR)  # socket already closed at exit -> 'Exception ignored in'


class TokDS(Dataset):
    def __init__(self, rank, n=512, seqlen=16, vocab=64, ragged=False, bad_ids=False):
        g = torch.Generator().manual_seed(1234 + rank)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        self.x = (start + torch.arange(seqlen)) % vocab  # learnable: next token = token + 1
        self.ragged = ragged
        if bad_ids:  # tokenizer with a larger vocab than the model was built for
            self.x = torch.randint(0, vocab + 40, (n, seqlen), generator=g)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.ragged and i % 7 == 3:
            x = x[: 16 - (i % 5) - 1]  # truncation applied per sample, no padding
        if args.fault == "worker-hang" and i >= 200:
            time.sleep(3600)  # waits on a lock held by a dead NFS client, in reality
        return x


class Net(nn.Module):
    def __init__(self, vocab, d=32, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.l1 = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)
        self.aux = nn.Linear(d, 1) if extra_head else None
    def forward(self, x, use_aux=True):
        h = torch.tanh(self.l1(self.emb(x)))
        o = self.out(h)
        if self.aux is not None and use_aux:
            o = o + 0.0 * self.aux(h).mean()
        return o


def setup_logging(rank):
    fmt = "%(asctime)s [rank%(rank)s] %(levelname)s %(name)s: %(message)s" if args.ts else "[rank%(rank)s] %(levelname)s: %(message)s"
    old = logging.getLogRecordFactory()
    def fac(*a, **k):
        r = old(*a, **k)
        r.rank = rank
        return r
    logging.setLogRecordFactory(fac)
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout, force=True)
    return logging.getLogger("train")


def main(rank, world):
    log = setup_logging(rank)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    if "faulthandler" in NOISE:
        faulthandler.dump_traceback_later(4, repeat=("repeat" in args.noise), file=sys.stderr)
    if "deprec" in NOISE:
        warnings.simplefilter("always")
    ticket = None
    if "excignored" in NOISE:
        s = socket.socket()
        ticket = Ticket(s)
        import atexit
        atexit.register(s.close)
        sys.modules["__main__"].__dict__.setdefault("_tickets", []).append(ticket)
    cfg = {"lr": args.lr, "d": 32}
    if args.config:
        with open(args.config) as f:
            cfg.update(json.load(f))
        log.info("loaded config %s: %s", args.config, cfg)
    os.makedirs(args.workdir, exist_ok=True)
    torch.manual_seed(0)
    extra = args.fault == "unused-param"
    model = Net(args.vocab, cfg["d"], extra_head=extra)
    if args.fault == "resume-truncated" or args.fault == "resume-ok":
        ck = os.path.join(args.workdir, "last.pt")
        log.info("resuming from %s", ck)
        sd = torch.load(ck, map_location="cpu")
        model.load_state_dict(sd["model"])
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model

    # data
    shard = os.path.join(args.workdir, f"shard_{rank}.pt")
    if "retry" in NOISE:
        if rank == 0 or world == 1:
            log.info("preparing shards in %s", args.workdir)
        want = shard if args.fault != "shard-missing" else os.path.join(args.workdir, "shards", f"shard_{rank:05d}.pt")
        # the preparer writes the shard a few seconds late
        if rank == 0 or world == 1:
            pass
        import threading
        threading.Timer(2.5, lambda: torch.save(torch.randint(0, args.vocab, (512, 16)), shard)).start()
        for attempt in range(1, 5):
            try:
                data = torch.load(want)
                log.info("loaded shard %s on attempt %d", want, attempt)
                break
            except FileNotFoundError as e:
                if attempt == 4:
                    raise
                log.warning("attempt %d/4 to load %s failed (%s); retrying in %.1fs", attempt, want, e, 1.5 * attempt)
                time.sleep(1.5 * attempt)
    ds = TokDS(rank, vocab=args.vocab, ragged=(args.fault == "ragged" and rank == args.fault_rank),
               bad_ids=(args.fault == "vocab" and rank == args.fault_rank))
    nw = 1 if args.fault == "worker-hang" else 0
    dl = DataLoader(ds, batch_size=16, shuffle=False, num_workers=nw, timeout=(8 if nw else 0))
    opt = torch.optim.SGD(ddp.parameters(), lr=cfg["lr"])
    use_scaler = "scaler" in NOISE
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 22, growth_interval=5) if use_scaler else None

    it = iter(dl)
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr, mininterval=0)
    first_loss = None
    for step in range(args.steps):
        try:
            x = next(it)
        except StopIteration:
            it = iter(dl); x = next(it)
        if "deprec" in NOISE:
            # old-style AMP API still used by this codebase
            with torch.cpu.amp.autocast(enabled=False):
                pass
            warnings.warn("`Net.forward(use_aux=...)` is deprecated and will be removed in v0.9; use `aux_weight`", FutureWarning)
        if "slow" in NOISE and step == 6 and rank == 0:
            time.sleep(5)  # periodic eval on rank 0 (the others wait in allreduce)
        if args.fault == "diverge" and step >= args.fault_step:
            for g in opt.param_groups:
                g["lr"] = cfg["lr"] * 1000  # warmup schedule read lr in wrong units
        if args.fault == "spike-recover" and step == args.fault_step:
            x = x.flip(1)  # one batch written right-to-left by a buggy preprocessing shard
        inp, tgt = x[:, :-1], x[:, 1:]
        if args.fault == "unused-param" and rank == args.fault_rank and step >= args.fault_step:
            logits = ddp(inp, use_aux=False)
        else:
            logits = ddp(inp)
        if use_scaler:
            with torch.autocast("cpu", dtype=torch.float16):
                h = logits.half()
                if args.fault == "inf-input" and rank == args.fault_rank and step >= args.fault_step:
                    h = h * 1.0e5  # unnormalised feature branch -> overflows fp16 every step
                if args.fault != "inf-input" and step in (3, 9):
                    h = h * 2048.0
                loss = F.cross_entropy(h.float().reshape(-1, args.vocab), tgt.reshape(-1))
            scaler.scale(loss).backward()
            scaler.step(opt)
            old = scaler.get_scale()
            scaler.update()
            if scaler.get_scale() < old:
                log.warning("step %d: gradient overflow detected, skipping update; loss scale %.1f -> %.1f", step, old, scaler.get_scale())
            if scaler.get_scale() < 1e-4:
                raise FloatingPointError(
                    "Minimum loss scale reached ({}). Your loss is probably exploding. "
                    "Try lowering the learning rate, using gradient clipping or increasing the batch size.".format(1e-4))
        else:
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), tgt.reshape(-1))
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        lv = loss.item()
        if first_loss is None:
            first_loss = lv
        if not use_scaler and not math.isfinite(lv):
            raise FloatingPointError(f"Loss is {lv} at step {step}, stopping training")
        # metrics reduction
        m = torch.tensor([lv, float(x.numel())])
        if args.fault == "metric-shape" and rank == args.fault_rank and step >= args.fault_step:
            m = torch.tensor([lv, float(x.numel()), float(step)])  # grad-norm appended on this rank only
        if world > 1:
            dist.all_reduce(m)
            m /= world
        if "caught" in NOISE and step % 8 == 5:
            try:
                gn = {k: v.grad.norm() for k, v in model.named_parameters()}
                log.info("grad norm emb %.3f", gn["module.emb.weight"])
            except Exception:
                log.exception("could not compute grad-norm metrics at step %d (continuing)", step)
        if "errorlines" in NOISE and step % 10 == 4:
            try:
                c = socket.create_connection(("127.0.0.1", 39299), timeout=1)
                c.close()
            except OSError as e:
                log.error("metrics push to 127.0.0.1:39299 failed: %s; buffering %d points", e, step + 1)
        if args.fault == "ckpt-readonly" and step == args.fault_step and rank == args.fault_rank:
            ck = os.path.join(args.workdir, "ro", f"step{step}.pt")
            log.info("saving checkpoint to %s", ck)
            torch.save({"model": model.state_dict(), "step": step}, ck)
        if args.fault == "ckpt-longname" and step == args.fault_step and rank == 0:
            tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items()) if "/" not in str(v) for _ in range(3))
            ck = os.path.join(args.workdir, f"ckpt-{tag}-step{step}.pt")
            log.info("saving checkpoint to %s", ck)
            torch.save({"model": model.state_dict(), "step": step}, ck)
        if args.fault == "save-ok" and step == args.fault_step and rank == 0:
            ck = os.path.join(args.workdir, "last.pt")
            torch.save({"model": model.state_dict(), "step": step}, ck)
            log.info("saved checkpoint %s", ck)
        if args.fault == "cache-all" and step == args.fault_step and rank == args.fault_rank:
            log.info("building in-memory token cache for eval")
            cache = torch.empty(64 * 1024 * 1024 * 1024 // 4, dtype=torch.float32)
        if args.fault == "pidfile" and step == args.fault_step and rank == args.fault_rank:
            with open(os.path.join(args.workdir, "victim.pid"), "w") as f:
                f.write(str(os.getpid()))
        if args.fault == "ascii-print" and rank == 0 and step == args.fault_step:
            print(f"step {step:4d} │ loss {m[0].item():.4f} ↓ │ tok {int(m[1].item())}", flush=True)
        if rank == 0 and (step % 3 == 0 or step == args.steps - 1):
            if bar is not None:
                bar.set_postfix(loss=f"{m[0].item():.4f}")
            else:
                log.info("step %d loss %.4f lr %.4g", step, m[0].item(), opt.param_groups[0]["lr"])
        if args.fault == "deadlock":
            record_metric(log, "loss", m[0].item(), flush=(step == args.fault_step))
        if bar is not None:
            bar.update(1)
        if "slowall" in NOISE:
            time.sleep(0.2)
    if bar is not None:
        bar.close()
    if rank == 0:
        log.info("training finished: %d steps, first loss %.4f, final loss %.4f", args.steps, first_loss, m[0].item())
    if "faulthandler" in NOISE:
        faulthandler.cancel_dump_traceback_later()
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main(0, 1)
