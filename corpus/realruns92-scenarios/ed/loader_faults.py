"""Single-process (or torchrun) training with a DataLoader, tqdm/logging output, and process-death faults.

--fault:
  none        healthy
  npcache     builds an in-RAM feature cache with numpy (hits ulimit -v when the cache is large)
  worker-exit a record "decoder" used inside DataLoader workers calls os._exit() on a bad record
  wait        workers/main write pid files (--pid-dir) so an outside process can signal them
  ckpt        save a checkpoint every --ckpt-every steps (used with ulimit -f)
"""
import argparse, datetime, logging, os, sys, time, warnings
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--bad-index", type=int, default=150)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--n", type=int, default=512)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--rank0-workers", type=int, default=-1, help="override num_workers on rank 0 (it also logs/evals)")
p.add_argument("--batch", type=int, default=16)
p.add_argument("--cache-rows", type=int, default=20000)
p.add_argument("--pid-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-dir", default="/tmp/rr92ed_ckpt")
p.add_argument("--log-style", default="tqdm", choices=["tqdm", "logging"])
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")
log = logging.getLogger(f"trainer.rank{rank}")
say = log.info if args.log_style == "logging" else (lambda m: print(m, flush=True))


def decode_record(buf, idx):
    # stands in for a native decoder that terminates the process on a malformed record
    if buf[:4] != b"REC1":
        sys.stderr.flush()
        os._exit(1)
    return np.frombuffer(buf[4:], dtype=np.float32)


class Records(Dataset):
    def __init__(self, n, bad):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 32)).astype(np.float32)
        self.y = rng.integers(0, 4, n)
        self.bad = bad

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if args.pid_dir:
            wi = torch.utils.data.get_worker_info()
            if wi is not None:
                pf = os.path.join(args.pid_dir, f"rank{rank}_worker{wi.id}.pid")
                if not os.path.exists(pf):
                    open(pf, "w").write(str(os.getpid()))
        buf = (b"REC1" if i != self.bad else b"\x00\x00\x00\x00") + self.x[i].tobytes()
        x = decode_record(buf, i) if args.fault == "worker-exit" and rank == args.fault_rank else self.x[i]
        time.sleep(0.002)
        return torch.from_numpy(np.array(x)), int(self.y[i])


def main():
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        open(os.path.join(args.pid_dir, f"rank{rank}.pid"), "w").write(str(os.getpid()))
    say(f"rank {rank}/{world} pid {os.getpid()} | fault={args.fault}")
    if args.fault == "npcache":
        say(f"building feature cache: {args.cache_rows} x 8192 float64")
        cache = np.zeros((args.cache_rows, 8192))
        cache[:, 0] = 1.0
        say("feature cache ready")
    ds = Records(args.n, args.bad_index)
    sampler = DistributedSampler(ds, shuffle=False) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=False, num_workers=(args.rank0_workers if rank == 0 and args.rank0_workers >= 0 else args.workers),
                    persistent_workers=False)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 4))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        it = dl
        if args.log_style == "tqdm" and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", ncols=100)
        tot = 0.0
        for x, y in it:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item(); step += 1
            if args.log_style == "tqdm" and rank == 0:
                it.set_postfix(loss=f"{loss.item():.4f}")
            elif step % 5 == 0:
                say(f"epoch {ep} step {step} loss {loss.item():.4f}")
            if args.ckpt_every and step % args.ckpt_every == 0 and rank == 0:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                path = os.path.join(args.ckpt_dir, f"step{step}.pt")
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                replay = np.random.default_rng(step).standard_normal((512, 1024)).astype(np.float32)
                with open(os.path.join(args.ckpt_dir, f"replay_step{step}.bin"), "wb") as fh:
                    fh.write(replay.tobytes())
                say(f"checkpoint saved: {path}")
            time.sleep(args.step_sleep)
        say(f"epoch {ep} done: mean loss {tot / max(1, len(dl)):.4f}")
    if world > 1:
        import torch.distributed as dist
        dist.barrier(); dist.destroy_process_group()
    say("done")


if __name__ == "__main__":
    main()
