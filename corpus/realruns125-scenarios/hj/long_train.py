"""Tiny GPT-2 language-model pre-training on a synthetic corpus, DDP over gloo.

Used for runs that are stopped from outside (wall-clock limit, Ctrl-C, kill of one rank, SIGSTOP ...).
Launch with torchrun, or with --spawn N (torch.multiprocessing.spawn), or plain python (single process).
  --graceful-save      install a SIGTERM handler that writes a full checkpoint before exiting
  --keep-history       keep every step's logits for "later analysis" (host memory grows each step)
  --progress           tqdm progress bar on rank 0
"""
import argparse
import datetime
import logging
import os
import resource
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=46069)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--graceful-save", action="store_true")
p.add_argument("--keep-history", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--ts", action="store_true")
p.add_argument("--ckpt-dir", default="/work/rr125/hj/runs/ckpt")
p.add_argument("--seq", type=int, default=64)
p.add_argument("--bs", type=int, default=8)
args = p.parse_args()


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(local_rank=0, spawn_world=0):
    if spawn_world:
        os.environ.update(RANK=str(local_rank), WORLD_SIZE=str(spawn_world), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(args.port), LOCAL_RANK=str(local_rank))
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    if args.ts:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s - rank{rank} - %(levelname)s - %(message)s")
    log = logging.getLogger("pretrain")
    say = log.info if args.ts else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    with open(f"/work/rr125/hj/runs/pid.{os.environ.get('MASTER_PORT')}.rank{rank}", "w") as f:
        f.write(str(os.getpid()))

    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=128)
    model = GPT2LMHeadModel(cfg)
    say(f"model params: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M, world_size={world}")
    net = DDP(model) if distributed else model
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
    sched = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total_iters=args.steps)

    state = {"step": 0}
    if args.graceful_save:
        def on_term(signum, frame):
            say(f"received signal {signum} at step {state['step']}, writing full checkpoint before exit ...")
            os.makedirs(args.ckpt_dir, exist_ok=True)
            # full checkpoint incl. optimizer state, written shard by shard
            for i in range(200):
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": state["step"]},
                           os.path.join(args.ckpt_dir, f"rank{rank}-part{i:03d}.pt"))
                time.sleep(0.1)
            say("checkpoint written")
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)

    g = torch.Generator().manual_seed(rank)
    history = []
    it = range(1, args.steps + 1)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, mininterval=1.0)
    t0 = time.time()
    for step in it:
        state["step"] = step
        ids = torch.randint(0, 512, (args.bs, args.seq), generator=g)
        out = net(input_ids=ids, labels=ids)
        opt.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        if args.keep_history:
            history.append(out.logits.detach().clone().repeat(4, 1, 1))
        if step % 10 == 0:
            msg = (f"step {step}/{args.steps} loss {out.loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} "
                   f"{(time.time() - t0) / step:.2f}s/it max_rss {rss_mb():.0f}MB")
            if args.progress and rank == 0:
                it.set_postfix(loss=f"{out.loss.item():.3f}")
            else:
                say(msg)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    say("training complete")


if __name__ == "__main__":
    if args.spawn:
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
