"""Tiny DDP/plain torch trainer with knobs for healthy-but-noisy runs and real faults.

--fault selects: none | retry_ckpt | nan_skip | perm_ckpt | missing_shard | resume_mismatch |
                 corrupt_resume | lastbatch_squeeze | unused_branch | nan_stop | sleepy
"""
import argparse, logging, os, sys, time, warnings, datetime, math
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=0)
p.add_argument("--fstep", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--resume", default="")
p.add_argument("--data-dir", default="")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--nsamples", type=int, default=64)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--stamped", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
a = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

fmt = "%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s" if a.stamped else "[rank%(rank)s] %(levelname)s %(message)s"
old = logging.getLogRecordFactory()
def fac(*args, **kw):
    r = old(*args, **kw); r.rank = rank; return r
logging.setLogRecordFactory(fac)
logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout)
log = logging.getLogger("trainer")
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, h, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(16, h)
        self.fc2 = nn.Linear(h, 4)
        if extra:
            self.aux_head = nn.Linear(h, 4)  # used only when aux loss is enabled
        self.use_aux = False

    def forward(self, x):
        z = torch.relu(self.fc1(x))
        out = self.fc2(z)
        if self.use_aux:
            out = out + self.aux_head(z)
        return out


def load_data():
    if a.data_dir:
        path = os.path.join(a.data_dir, f"shard-{rank:05d}-of-{world:05d}.pt")
        log.info("loading shard %s", path)
        d = torch.load(path)
        return d["x"], d["y"]
    g = torch.Generator().manual_seed(rank)
    n = a.nsamples
    if a.fault == "lastbatch_squeeze" and rank == a.frank:
        n = a.nsamples + 1  # uneven split: this rank gets one extra sample
    x = torch.randn(n, 16, generator=g)
    y = torch.randint(0, 4, (n, 1), generator=g)
    return x, y


model = Net(a.hidden, extra=(a.fault == "unused_branch"))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
core = model.module if distributed else model
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)

if a.resume:
    log.info("resuming from %s", a.resume)
    sd = torch.load(a.resume, map_location="cpu")
    core.load_state_dict(sd["model"])
    opt.load_state_dict(sd["optim"])
    log.info("resumed at step %d", sd["step"])

x, y = load_data()
log.info("dataset: %d samples, world_size=%d, batch=%d", len(x), world, a.bs)


def save_ckpt(step):
    os.makedirs(a.ckpt_dir, exist_ok=True) if a.fault != "retry_ckpt" else None
    path = os.path.join(a.ckpt_dir, f"step-{step}.pt")
    torch.save({"model": core.state_dict(), "optim": opt.state_dict(), "step": step}, path)
    log.info("saved checkpoint %s", path)


def save_with_retry(step, attempts=3):
    for i in range(1, attempts + 1):
        try:
            save_ckpt(step)
            return
        except (OSError, RuntimeError):
            log.exception("checkpoint write failed (attempt %d/%d), retrying in 1s", i, attempts)
            time.sleep(1)
            os.makedirs(a.ckpt_dir, exist_ok=True)
    raise RuntimeError("giving up on checkpoint")


step = 0
skipped = 0
for epoch in range(100):
    for i in range(0, len(x), a.bs):
        if step >= a.steps:
            break
        xb, yb = x[i:i + a.bs], y[i:i + a.bs]
        if a.fault in ("nan_skip", "nan_stop") and rank == a.frank and step >= a.fstep and (a.fault == "nan_stop" or step == a.fstep):
            xb = xb.clone(); xb[0, 0] = float("inf")
        if a.fault == "unused_branch" and step == a.fstep:
            log.info("enabling auxiliary head from step %d", step)
            core.use_aux = False  # bug: aux head enabled in config but never wired in
        t0 = time.time()
        out = model(xb)
        loss = F.cross_entropy(out, yb.squeeze())
        finite = torch.tensor([1.0 if torch.isfinite(loss) else 0.0])
        if distributed:
            dist.all_reduce(finite, op=dist.ReduceOp.MIN)
        if finite.item() == 0.0:
            if a.fault == "nan_stop":
                skipped += 1
                log.warning("step %d: non-finite loss %s, skipping update (%d consecutive)", step, loss.item(), skipped)
                if skipped >= 3:
                    log.error("loss is nan for %d consecutive steps, aborting run", skipped)
                    sys.exit(1)
                step += 1
                continue
            log.warning("step %d: non-finite loss (%s) on at least one rank, skipping optimizer step", step, loss.item())
            opt.zero_grad(set_to_none=True)
            step += 1
            continue
        skipped = 0
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if a.fault == "sleepy" and rank == a.frank and step == a.fstep:
            time.sleep(4)
        time.sleep(a.step_sleep)
        dt = time.time() - t0
        if dt > 2:
            log.warning("step %d was slow: %.1fs (expected <0.1s)", step, dt)
        log.info("epoch %d step %d loss %.4f grad_norm %.3f lr %.3g", epoch, step, loss.item(), gn.item(), a.lr)
        step += 1
        if step % 4 == 0 and rank == 0:
            if a.fault == "retry_ckpt":
                save_with_retry(step)
            else:
                save_ckpt(step)
        if step % 4 == 0 and distributed:
            dist.barrier()
    if step >= a.steps:
        break

log.info("training finished after %d steps", step)
if distributed:
    dist.barrier()
    dist.destroy_process_group()
