"""Small DDP training loop (gloo, CPU) with selectable real faults.

--fault selects the bug, --fail-rank the rank on which it occurs, --fail-step the step.
"""
import argparse
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
p.add_argument("--fault", default="none")
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--ckpt-dir", default="/work/rr67/ax/tmp/ckpt")
p.add_argument("--color", action="store_true")
p.add_argument("--log-fmt", default="plain")
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--dump-on-usr1", action="store_true", help="faulthandler stack dump on SIGUSR1 (debug hangs)")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


class ColorFormatter(logging.Formatter):
    COLORS = {"DEBUG": "\033[36m", "INFO": "\033[32m", "WARNING": "\033[33m", "ERROR": "\033[31m",
              "CRITICAL": "\033[1;31m"}

    def format(self, record):
        c = self.COLORS.get(record.levelname, "")
        record.levelname = f"{c}{record.levelname}\033[0m"
        return super().format(record)


h = logging.StreamHandler(sys.stdout)
fmt = "%(asctime)s | %(levelname)s | rank%(rank)s | %(message)s"
h.setFormatter(ColorFormatter(fmt) if args.color else logging.Formatter(fmt))
log = logging.getLogger("train")
log.addHandler(h)
log.setLevel(logging.INFO)
log = logging.LoggerAdapter(log, {"rank": rank})


class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_cls=10, vocab=100, extra=False, aux=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_in)
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_cls)
        if aux:
            self.aux = nn.Linear(hidden, n_cls)  # auxiliary head (config: aux_head=true)
        if extra:
            self.proj = nn.Linear(hidden, hidden)

    def forward(self, tok, use_aux=False):
        x = self.emb(tok).mean(1)
        hdn = F.relu(self.fc1(x))
        if hasattr(self, "proj"):
            hdn = hdn + self.proj(hdn)
        out = self.fc2(hdn)
        if use_aux:
            out = out + self.aux(hdn)
        return out


def main():
    if args.dump_on_usr1:
        import faulthandler, signal
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        os.makedirs("/work/rr67/ax/tmp/pids", exist_ok=True)
        with open(f"/work/rr67/ax/tmp/pids/rank{rank}.pid", "w") as f:
            f.write(str(os.getpid()))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    vocab = 100
    model = MLP(vocab=vocab, extra=(args.fault == "model_mismatch" and rank == args.fail_rank),
                aux=(args.fault == "unused_params"))
    if args.fault == "resume_mismatch":
        path = os.path.join(args.ckpt_dir, "model_step100.pt")
        os.makedirs(args.ckpt_dir, exist_ok=True)
        if rank == 0:
            # checkpoint written by an older version of the model (hidden=48)
            torch.save(MLP(vocab=vocab, hidden=48).state_dict(), path)
        if world > 1:
            dist.barrier()
        if rank == args.fail_rank or world == 1:
            log.info(f"resuming from {path}")
            model.load_state_dict(torch.load(path, map_location="cpu"))
    if args.fault == "resume_missing" and rank == args.fail_rank:
        path = os.path.join(args.ckpt_dir, f"run-{os.environ.get('RUN_ID', '0412')}", "last.pt")
        log.info(f"resuming from {path}")
        model.load_state_dict(torch.load(path, map_location="cpu"))
    if args.fault == "resume_corrupt" and rank == args.fail_rank:
        path = os.path.join(args.ckpt_dir, "interrupted.pt")
        log.info(f"resuming from {path}")
        model.load_state_dict(torch.load(path, map_location="cpu"))
    find_unused = args.fault == "none_unused_warn"
    ddp = DDP(model, find_unused_parameters=find_unused) if world > 1 else model
    params = ddp.parameters()
    if args.fault == "freeze_all":
        # fine-tune only the head: freeze everything whose name does not start with "head."
        for n, prm in model.named_parameters():
            prm.requires_grad = n.startswith("head.")
        params = [prm for prm in ddp.parameters() if prm.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps if args.fault != "onecycle" else args.steps - 2)
    if args.fault == "none_warn":
        warnings.warn("This DataLoader will create 8 worker processes in total. Our suggested max number of "
                      "worker in current system is 2, which is smaller than what this DataLoader is going to "
                      "create. Please be aware that excessive worker creation might get DataLoader running "
                      "slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                      UserWarning)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        bs = 16
        tok = torch.randint(0, vocab, (bs, 12), generator=g)
        y = torch.randint(0, 10, (bs,), generator=g)
        fail_here = (rank == args.fail_rank or world == 1) and step == args.fail_step
        if args.fault == "embed_oob" and fail_here:
            # tokenizer added special tokens but the embedding was never resized
            tok[0, -1] = vocab + 3
        if args.fault == "label_shape" and fail_here:
            y = F.one_hot(y, 10).float()[:, :9]
        use_aux = False  # aux loss disabled in this config, head still built
        if args.fault == "collective_mismatch" and step == args.fail_step:
            stats = torch.tensor([float(step), 1.0, 2.0] if rank != args.fail_rank else [float(step), 1.0])
            dist.all_reduce(stats)
        if args.fault == "gloo_avg" and step == args.fail_step:
            m = torch.tensor([1.0])
            dist.all_reduce(m, op=dist.ReduceOp.AVG)
        out = ddp(tok, use_aux=use_aux) if args.fault == "unused_params" else ddp(tok)
        if args.fault == "dtype" and fail_here:
            out = out.double()
            loss = F.cross_entropy(out, y) + (out @ torch.ones(10, 1)).mean()
        else:
            loss = F.cross_entropy(out, y)
        if args.fault == "nan" and fail_here:
            loss = loss * torch.log(torch.tensor(-1.0 + step * 0))
        if args.fault in ("nan", "nan_check") and not torch.isfinite(loss):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step}; stopping (check lr / data)")
        opt.zero_grad()
        if args.fault == "hang" and fail_here:
            log.info("rank %d: evaluating on held-out set before backward" % rank)
            while True:  # eval loop waiting on a queue that never fills
                time.sleep(1)
        loss.backward()
        if args.fault == "backward_twice" and fail_here:
            loss.backward()
        opt.step()
        sched.step()
        if args.fault == "none_warn" and step == 1:
            # legacy call kept from an old codebase
            torch.nn.utils.clip_grad_norm(ddp.parameters(), 1.0)
        if args.fault == "oom_alloc" and fail_here:
            # "cache" activations for analysis: requested size computed from a wrong config value
            n = 64 * 1024 * 1024 * 1024
            cache = torch.empty(n, dtype=torch.float32)
        metrics = {"loss": loss.item(), "lr": sched.get_last_lr()[0]}
        if step % 2 == 0:
            metrics["acc"] = (out.argmax(-1) == y).float().mean().item()
        if args.fault == "keyerror" and rank == args.fail_rank and step >= args.fail_step:
            log.info(f"step {step} loss {metrics['loss']:.4f} acc {metrics['acc']:.3f}")  # acc only logged on even steps
        log.info(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
        if args.fault in ("save_perm", "save_enospc", "save_longname") and step == args.fail_step and (rank == 0):
            if args.fault == "save_longname":
                tag = "-".join(f"{k}={v}" for k, v in sorted(vars(args).items()) if k != "ckpt_dir") * 4
                path = os.path.join(args.ckpt_dir, f"ckpt_{tag}_step{step}.pt")
            else:
                path = os.path.join(args.ckpt_dir, f"step_{step}.pt")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            log.info(f"saving checkpoint to {path}")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
        time.sleep(0.2)
    if world > 1:
        dist.barrier()
    log.info("training finished")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
