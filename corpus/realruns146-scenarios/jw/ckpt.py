"""Tiny DDP trainer with periodic checkpointing and resume.

Checkpoint-related knobs: --ckpt-dir, --tmp-dir (atomic save: write tmp then rename), --save-every,
--resume PATH, --hidden, --param-groups, --store-namespace, --sharded (one file per rank),
--format pt|safetensors, --tie (tie embedding and output head), --bare-load (load into unwrapped model),
--strict-off (load_state_dict(strict=False)), --run-name-from-config.
"""
import argparse
import datetime
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--tmp-dir", default=None)
p.add_argument("--resume", default=None)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--vocab", type=int, default=256)
p.add_argument("--param-groups", type=int, default=1)
p.add_argument("--store-namespace", action="store_true")
p.add_argument("--sharded", action="store_true")
p.add_argument("--format", default="pt")
p.add_argument("--tie", action="store_true")
p.add_argument("--bare-load", action="store_true")
p.add_argument("--strict-off", action="store_true")
p.add_argument("--run-name-from-config", action="store_true")
p.add_argument("--new-head", action="store_true")
p.add_argument("--pylogging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--sched-warn", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--data-files", default="data/text/train-00000.jsonl")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=47790)
p.add_argument("--optim", default="adamw")
p.add_argument("--mmap-load", action="store_true", help="torch.load(mmap=True) to avoid a second copy in RAM")
args = p.parse_args()


def setup(local_rank=None, world=None):
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, tie, new_head=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.block = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                   nn.Linear(4 * hidden, hidden))
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        if tie:
            self.lm_head.weight = self.embed.weight
        if new_head:
            self.cls_head = nn.Linear(hidden, 4)

    def forward(self, x):
        h = self.embed(x)
        h = h + self.block(h)
        return self.lm_head(h)


def main():
    rank, world = setup()
    if args.pylogging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s - %(message)s")
    log = logging.getLogger("trainer")

    def say(msg, level=logging.INFO):
        if args.pylogging:
            log.log(level, msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.hidden, args.tie, args.new_head)
    core = model
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    if args.param_groups == 2:
        decay = [p for n, p in core.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in core.named_parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = model.parameters()
    if args.optim == "sgd":
        opt = torch.optim.SGD(groups, lr=3e-2, momentum=0.9)
    else:
        opt = torch.optim.AdamW(groups, lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    nparams = sum(p.numel() for p in core.parameters())
    say(f"world_size={world} params={nparams/1e3:.1f}K hidden={args.hidden} tie={args.tie}")

    start = 0
    if args.resume:
        path = args.resume
        if args.sharded:
            path = os.path.join(args.resume, f"rank_{rank:02d}.pt")
        say(f"resuming from {path}")
        ckpt = torch.load(path, map_location="cpu", mmap=args.mmap_load) if args.format == "pt" else None
        if args.format == "safetensors":
            from safetensors.torch import load_file
            sd = load_file(path)
            ckpt = {"model": sd, "step": 0}
        target = core if args.bare_load else model
        res = target.load_state_dict(ckpt["model"], strict=not args.strict_off)
        if args.strict_off:
            say(f"loaded weights with strict=False: {res}", logging.WARNING)
        if "optim" in ckpt and not args.strict_off:
            opt.load_state_dict(ckpt["optim"])
        elif args.strict_off:
            say("optimizer state not restored (new parameters); starting from fresh AdamW moments", logging.WARNING)
        start = ckpt.get("step", 0)
        say(f"resumed at step {start}")

    if args.sched_warn:
        sched.step()  # old-style: scheduler stepped at the top of the epoch

    run_name = "tinylm"
    if args.run_name_from_config:
        cfg = {k: v for k, v in vars(args).items() if v not in (None, False)}
        run_name = "tinylm_" + "_".join(f"{k}={v}" for k, v in sorted(cfg.items())).replace("/", "-")

    def save(step):
        os.makedirs(args.ckpt_dir, exist_ok=True)
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step,
                 "args": args if args.store_namespace else vars(args)}
        if args.format == "safetensors":
            from safetensors.torch import save_file
            if rank == 0:
                out = os.path.join(args.ckpt_dir, f"model-step{step}.safetensors")
                save_file(core.state_dict(), out, metadata={"step": str(step)})
                say(f"saved {out}")
            return
        if args.sharded:
            out = os.path.join(args.ckpt_dir, f"step_{step}", f"rank_{rank:02d}.pt")
            os.makedirs(os.path.dirname(out), exist_ok=True)
        elif rank == 0:
            out = os.path.join(args.ckpt_dir, f"{run_name}-step{step}.pt")
        else:
            return
        tmp_dir = args.tmp_dir or os.path.dirname(out)
        tmp = os.path.join(tmp_dir, os.path.basename(out) + ".tmp")
        with open(tmp, "wb") as fh:
            torch.save(state, fh)
        os.rename(tmp, out)
        say(f"saved checkpoint {out} ({os.path.getsize(out)/1e3:.1f} kB)")

    g = torch.Generator().manual_seed(rank)
    pbar = None
    if args.progress and rank == 0:
        from tqdm import tqdm
        pbar = tqdm(range(start, args.steps), desc="steps", ncols=90)
    t0 = time.time()
    for step in range(start + 1, args.steps + 1):
        x = torch.randint(0, args.vocab, (8, 16), generator=g)
        y = torch.roll(x, -1, 1)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if not args.sched_warn:
            sched.step()
        if pbar is not None:
            pbar.update(1)
            pbar.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 5 == 0:
            say(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e}")
        if step % args.save_every == 0:
            save(step)
        if args.step_sleep:
            time.sleep(args.step_sleep)
    if pbar is not None:
        pbar.close()
    say(f"finished {args.steps} steps in {time.time()-t0:.1f}s")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def _spawn_entry(local_rank, nprocs):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nprocs),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    main()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
