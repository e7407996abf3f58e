"""Tiny DDP/manual-allreduce trainer used to reproduce hangs and stalls between ranks.

Flags select the fault (--fault), the misbehaving rank (--frank) and the step (--fstep).
"""
import argparse
import faulthandler
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

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=1)
p.add_argument("--fstep", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--dump-after", type=int, default=0, help="faulthandler.dump_traceback_later seconds")
p.add_argument("--use-ddp", type=int, default=1)
p.add_argument("--logfmt", default="print", choices=["print", "logging"])
p.add_argument("--bar", type=int, default=0)
p.add_argument("--spawn", type=int, default=0, help="nprocs for torch.multiprocessing.spawn")
p.add_argument("--world", type=int, default=0)
p.add_argument("--port", type=int, default=46460)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--amp-cuda", type=int, default=0, help="config copied from the GPU recipe")
args = p.parse_args()


def get_logger(rank):
    if args.logfmt == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
            stream=sys.stdout,
        )
        lg = logging.getLogger("train")
        return lg.info, lg.warning
    return (lambda m: print(f"[rank{rank}] {m}", flush=True)), (lambda m: print(f"[rank{rank}] WARNING {m}", flush=True))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.head = nn.Linear(64, 4)
        self.skip_fc2 = False

    def forward(self, x):
        h = F.relu(self.fc1(x))
        if not self.skip_fc2:
            h = F.relu(self.fc2(h))
        return self.head(h)


def wait_for_file(path, info):
    # "wait until rank 0 has written the eval summary" -- polls forever
    n = 0
    while not os.path.exists(path):
        time.sleep(0.5)
        n += 1
        if n % 10 == 0:
            info(f"still waiting for {path} ...")


def main(local=None):
    if local is not None:  # mp.spawn path
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        rank, world = local, args.world or args.spawn
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    info, warn = get_logger(rank)
    faulthandler.enable()
    if args.dump_after:
        faulthandler.dump_traceback_later(args.dump_after, exit=False)
    torch.manual_seed(0)
    model = Net()
    if args.use_ddp:
        ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=bool(args.amp_cuda))
    else:
        ddp = model
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    scaler = None
    if args.amp_cuda:
        scaler = torch.cuda.amp.GradScaler()
    g = torch.Generator().manual_seed(100 + rank)
    info(f"world_size={world} backend={dist.get_backend()} pid={os.getpid()}")
    it = range(args.steps)
    if args.bar and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", file=sys.stderr, mininterval=0)
    t_last = time.time()
    for step in it:
        t_d = time.time()
        if args.fault == "straggler" and rank == args.frank:
            # this rank's data shard sits on a slow network mount
            time.sleep(args.step_sleep * 8)
        x = torch.randn(16, 32, generator=g)
        if args.fault == "short-seq" and rank == args.frank and step >= args.fstep:
            # this rank's bucket of short sequences takes the shallow path
            model.skip_fc2 = True
        t_data = time.time() - t_d
        t_b = time.time()
        y = torch.randint(0, 4, (16,), generator=g)
        if args.amp_cuda:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(ddp(x), y)
        else:
            loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        t_bwd = time.time() - t_b
        if not args.use_ddp:
            skip = args.fault == "skip-allreduce" and rank == args.frank and step == args.fstep
            if skip:
                # "local grad norm tiny -> no need to sync" (a real optimisation bug)
                warn(f"step {step}: grad norm below threshold, skipping gradient sync")
            else:
                for prm in model.parameters():
                    dist.all_reduce(prm.grad)
                    prm.grad /= world
        opt.step()

        # ---- logging of metrics: average loss over ranks
        lt = loss.detach().clone()
        if args.fault == "reorder" and rank == args.frank and step >= args.fstep:
            # refactor moved the lr broadcast before the loss reduction on this rank only
            lr_t = torch.tensor([0.05])
            dist.broadcast(lr_t, src=0)
            dist.all_reduce(lt)
        elif args.fault == "gather-uneven" and step == args.fstep:
            # gather per-rank predictions for metrics; last shard is shorter on frank
            n = 16 if rank != args.frank else 11
            preds = torch.zeros(n)
            out = [torch.zeros(16) for _ in range(world)]
            dist.all_gather(out, preds)
            dist.all_reduce(lt)
        else:
            t_s = time.time()
            dist.all_reduce(lt)
            t_sync = time.time() - t_s
            if args.fault == "reorder":
                lr_t = torch.tensor([0.05])
                dist.broadcast(lr_t, src=0)
        lt /= world

        if args.fault == "py-loop" and rank == args.frank and step == args.fstep:
            # waits for a summary file that rank 0 writes to its own local tmp dir
            info(f"step {step}: waiting for eval summary from rank 0")
            wait_for_file(f"/tmp/rr134ik_eval_summary_step{step}_nonexistent.json", info)
        if args.fault == "stall-long" and rank == args.frank and step == args.fstep:
            info(f"step {step}: rebuilding vocab cache (this may take a while)")
            time.sleep(args.pg_timeout * 3)
        if args.fault == "die-silent" and rank == args.frank and step == args.fstep:
            # a library calls os._exit(0) on a recoverable condition
            os._exit(0)
        if args.fault == "kill9" and rank == args.frank and step == args.fstep:
            os.kill(os.getpid(), 9)
        if args.fault == "sigstop" and rank == args.frank and step == args.fstep:
            os.kill(os.getpid(), 19)

        if args.fault == "early-stop" and rank == args.frank and step == args.fstep:
            # early stopping decided on the LOCAL (unsynced) validation loss
            info(f"step {step}: local val loss did not improve for 3 evals -> early stopping")
            break
        if step % 2 == 0 or args.fault == "straggler":
            dt = time.time() - t_last
            t_last = time.time()
            if args.fault == "straggler":
                info(f"step {step} loss {lt.item():.4f} step_time {dt:.2f}s data_time {t_data:.2f}s fwd_bwd(incl. grad sync) {t_bwd:.2f}s")
            else:
                info(f"step {step} loss {lt.item():.4f} step_time {dt:.2f}s")
        time.sleep(args.step_sleep)

        if step == args.fstep + 1 and args.fault in ("barrier-rank0", "monitored-rank0", "none-barrier"):
            if args.fault == "none-barrier" or rank == 0:
                info(f"step {step}: saving checkpoint")
                torch.save(model.state_dict(), f"/tmp/rr134ik_ckpt_{os.getpid()}.pt")
                if args.fault == "none-barrier":
                    time.sleep(1.5 if rank == 0 else 0)
                # barrier placed inside the rank-0-only branch
                if args.fault == "monitored-rank0":
                    dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
                else:
                    dist.barrier()
                os.remove(f"/tmp/rr134ik_ckpt_{os.getpid()}.pt")
        if args.fault == "monitored" and step == args.fstep + 1:
            if rank == args.frank:
                info(f"step {step}: computing extra validation metrics")
                t0 = time.time()
                while time.time() - t0 < args.pg_timeout * 3:
                    sum(i * i for i in range(20000))
            dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
    info("training finished")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=args.spawn)
    else:
        main()
