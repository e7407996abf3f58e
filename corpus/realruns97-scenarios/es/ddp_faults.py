"""Small DDP regression trainer (gloo/CPU) used to produce real multi-rank failure logs.

Launch with torchrun (env://), or with --spawn N for torch.multiprocessing.spawn, or via an
srun-like wrapper that sets SLURM_PROCID/SLURM_NTASKS.  --fault selects a real bug/misconfig that
is triggered on --fault-rank at --fault-step.
"""
import argparse
import ctypes
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="/work/rr97/es/work/data")
p.add_argument("--ckpt-dir", default="/work/rr97/es/work/ckpt")
p.add_argument("--prepare", type=int, default=0, help="write N shards and exit")
p.add_argument("--bad-dim-shard", type=int, default=-1)
p.add_argument("--bad-token-shard", type=int, default=-1)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=41400)
p.add_argument("--noisy", action="store_true")
p.add_argument("--noisy-upload", action="store_true")
p.add_argument("--resume", action="store_true")
p.add_argument("--sweep-safe-names", action="store_true", help="leave *_dir keys out of the run name")
p.add_argument("--run-note", default="")
p.add_argument("--vocab", type=int, default=0, help=">0: token model with embedding")
args = p.parse_args()

FEAT = 32


def prepare():
    os.makedirs(args.data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    w = torch.randn(FEAT, 1, generator=g)
    for r in range(args.prepare):
        dim = FEAT + 8 if r == args.bad_dim_shard else FEAT
        x = torch.randn(512, dim, generator=g)
        y = x[:, :FEAT] @ w + 0.1 * torch.randn(512, 1, generator=g)
        tok = torch.randint(0, 100, (512, 12), generator=g)
        if r == args.bad_token_shard:
            tok[300:, 5] = 100 + torch.randint(0, 28, (212,), generator=g)  # ids from a newer tokenizer
        torch.save({"x": x, "y": y, "tokens": tok}, os.path.join(args.data_dir, f"shard_{r:04d}.pt"))
        print(f"wrote shard {r}: x={tuple(x.shape)}")


class Net(nn.Module):
    def __init__(self, hidden, vocab=0):
        super().__init__()
        self.vocab = vocab
        if vocab:
            self.emb = nn.Embedding(vocab, 16)
            self.inp = nn.Linear(16 * 12, hidden)
        else:
            self.inp = nn.Linear(FEAT, hidden)
        self.mid = nn.Linear(hidden, hidden)
        self.aux = nn.Linear(hidden, hidden)  # auxiliary head, only used when use_aux
        self.out = nn.Linear(hidden, 1)

    def forward(self, batch, use_aux=True):
        if self.vocab:
            h = self.emb(batch["tokens"]).flatten(1)
        else:
            h = batch["x"]
        h = F.gelu(self.inp(h))
        h = F.gelu(self.mid(h))
        if use_aux:
            h = h + 0.1 * self.aux(h)
        return self.out(h)


def setup_logging(rank):
    if args.log_style == "logging":
        old = logging.getLogRecordFactory()

        def factory(*a, **kw):
            rec = old(*a, **kw)
            rec.rank = rank
            return rec

        logging.setLogRecordFactory(factory)
        logging.basicConfig(
            level=logging.INFO,
            format="%(asctime)s [RANK %(rank)s] %(levelname)s %(name)s: %(message)s",
            stream=sys.stdout,
        )
    log = logging.getLogger("train")

    def say(msg, level="info"):
        if args.log_style == "logging":
            getattr(log, level)(msg)
        else:
            print(f"[rank{rank}] {msg}" if level == "info" else f"[rank{rank}] {level.upper()}: {msg}", flush=True)

    return say


def run(rank, world):
    say = setup_logging(rank)
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    if args.noisy:
        warnings.warn("torch.set_num_threads(1) overrides OMP_NUM_THREADS; performance may be degraded", RuntimeWarning)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    if args.fault == "init-twice" :
        setup_distributed(rank, world)
    say(f"process group up: backend={dist.get_backend()} world_size={dist.get_world_size()}")

    # --- data: every rank reads its own shard ---
    shard = os.path.join(args.data_dir, f"shard_{rank:04d}.pt")
    data = torch.load(shard)
    n = data["x"].shape[0]
    say(f"loaded {shard} ({n} samples)")

    hidden = int(os.environ.get("MODEL_HIDDEN", args.hidden))  # per-node override (job env / ConfigMap)
    model = Net(hidden, vocab=args.vocab)
    ddp = DDP(model, find_unused_parameters=args.noisy)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)
    if args.noisy:
        sched.step()  # called before opt.step(): torch warns about the order
    start = 0
    os.makedirs(args.ckpt_dir, exist_ok=True)
    ck = os.path.join(args.ckpt_dir, "last.pt")
    if args.fault == "ckpt-name":
        # run name derived from the full hyper-parameter dict (sweep tooling)
        run_name = ",".join(f"{k}={v}" for k, v in sorted(vars(args).items()) if k not in ("fault", "prepare") and not (args.sweep_safe_names and k.endswith("_dir")))
        ck = os.path.join(args.ckpt_dir, f"{run_name}__last.pt")
    if args.resume and os.path.exists(ck):
        state = torch.load(ck)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"] + 1
        say(f"resumed from {ck} at step {start}")

    it = range(start, args.steps)
    if args.log_style == "tqdm":
        from tqdm import tqdm

        it = tqdm(it, desc=f"rank{rank}", position=rank, mininterval=0, file=sys.stderr)
    t0 = time.time()
    for step in it:
        lo = (step * args.bs) % n
        batch = {"x": data["x"][lo:lo + args.bs], "y": data["y"][lo:lo + args.bs], "tokens": data["tokens"][lo:lo + args.bs]}
        fault_now = rank == args.fault_rank and step == args.fault_step
        if fault_now and args.fault == "keyerror":
            # refactor renamed "y" -> "target" in the collate path, only used by the eval-mix branch on this rank
            batch = {"inputs": batch["x"], "target": batch["y"], "tokens": batch["tokens"]}
        if fault_now and args.fault == "sigkill":
            os.kill(os.getpid(), 9)
        if fault_now and args.fault == "segv":
            ctypes.string_at(0)  # dereference NULL in a native call
        if fault_now and args.fault == "oom":
            say(f"building eval cache of {args.bs * 4096} x 8192 floats")
            cache = torch.empty(args.bs * 4096, 8192)
            cache.zero_()
        use_aux = not (args.fault == "unused" and (rank == args.fault_rank or args.fault_rank < 0) and step >= args.fault_step)
        pred = ddp(batch, use_aux=use_aux)
        loss = F.mse_loss(pred, batch["y"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()

        # --- metrics / collectives ---
        if args.fault == "metric-shape" and step == args.fault_step:
            # per-bin error histogram, bins taken from the local targets
            nb = int(torch.unique((batch["y"] * 2).round()).numel())
            hist = torch.histc(batch["y"], bins=nb)
            dist.all_reduce(hist)
        if args.fault == "order" and step == args.fault_step:
            flag = torch.tensor([float(step)])
            lossb = loss.detach().clone()
            if rank == args.fault_rank:
                dist.broadcast(flag, src=0)
                dist.all_reduce(lossb)
            else:
                dist.all_reduce(lossb)
                dist.broadcast(flag, src=0)
        red = loss.detach().clone()
        if args.fault == "slow-save" and rank == args.fault_rank and step == args.fault_step:
            say(f"step {step}: writing full eval dump before reduce ...")
            time.sleep(args.pg_timeout * 3)
        dist.all_reduce(red)
        red /= world
        if args.log_style == "tqdm":
            it.set_postfix(loss=f"{red.item():.4f}")
        elif rank == 0 or args.log_style == "logging":
            say(f"step {step} loss {red.item():.4f} lr {sched.get_last_lr()[0]:.2e} ({time.time() - t0:.1f}s)")
        if rank == 0 and step % 5 == 4:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, ck)
        if args.noisy_upload and rank == 0 and step % 5 == 4:
            # best-effort copy of the checkpoint to the (optional) archive mount; failures are non-fatal
            try:
                import shutil
                shutil.copy(ck, "/mnt/ckpt-archive/run-es/last.pt")
            except OSError:
                import traceback
                traceback.print_exc()
                say("checkpoint archive upload failed, continuing training (local copy kept)", "warning")
        if args.noisy and step == 3 and rank == 0:
            say("grad norm spike detected (clip at 1.0), skipping nothing", "warning")
    dist.barrier()
    say("training done")
    dist.destroy_process_group()


def setup_distributed(rank, world):
    # helper from utils.py: (re)initialises the process group used by the trainer
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))


def spawn_main(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    run(rank, world)


if __name__ == "__main__":
    if args.prepare:
        prepare()
        sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp

        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        if "SLURM_PROCID" in os.environ and "RANK" not in os.environ:
            os.environ["RANK"] = os.environ["SLURM_PROCID"]
            os.environ["WORLD_SIZE"] = os.environ["SLURM_NTASKS"]
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
        run(rank, world)
