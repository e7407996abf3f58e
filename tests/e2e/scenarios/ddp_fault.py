"""A small DDP job (gloo, CPU) that fails in a chosen way on a chosen rank and step.

Run under torchrun. Modes: crash (an out-of-range token id reaches the embedding),
hang (the rank blocks before its collective and dumps its stack), slow (the rank's input pipeline is 4x
slower), nan (the rank's loss turns NaN), ok (a healthy run).
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import math
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

VOCAB = 64


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["crash", "hang", "slow", "nan", "ok"], default="ok")
    parser.add_argument("--fault-rank", type=int, default=1)
    parser.add_argument("--fault-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=8.0)
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("train")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, 8), torch.nn.Flatten(), torch.nn.Linear(8 * 4, 1))
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    faulty = rank == args.fault_rank
    log.info("world_size=%d steps=%d", dist.get_world_size(), args.steps)
    for step in range(args.steps):
        started = time.perf_counter()
        time.sleep(0.08 if args.mode == "slow" and faulty else 0.02)
        tokens = torch.randint(0, VOCAB, (8, 4))
        if args.mode == "crash" and faulty and step == args.fault_step:
            tokens[0, 0] = VOCAB + 7
        if args.mode == "hang" and faulty and step == args.fault_step:
            # what a job set up for hangs does: dump the stuck rank's stack when no step completes
            faulthandler.dump_traceback_later(args.timeout / 2)
            time.sleep(3600)
        loss = ddp(tokens).pow(2).mean()
        if args.mode == "nan" and faulty and step == args.fault_step:
            loss = loss * float("nan")
        compute = time.perf_counter() - started
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        wait = time.perf_counter() - started - compute
        value = loss.item()
        log.info("step %d/%d loss %.4f step_time %.1f ms sync_wait %.1f ms", step, args.steps, value,
                 compute * 1000, wait * 1000)
        if not math.isfinite(value) and step >= args.fault_step + 2:
            break
    # Drop DDP (its reducer holds gloo work) and line the ranks up before tearing the group
    # down: without this, torch 2.13 sometimes aborts a rank at exit ("terminate called
    # without an active exception", SIGABRT) after a healthy run.
    del ddp, optimizer
    dist.barrier()
    dist.destroy_process_group()
    log.info("training complete")


if __name__ == "__main__":
    main()
