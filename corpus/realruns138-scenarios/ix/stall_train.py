"""Small DDP training loop used to produce hang / stall / kill scenarios.

Flags select the fault, the rank and the step. Works under torchrun, python -m torch.distributed.run,
torch.multiprocessing.spawn (--spawn N) or as a plain single process.
"""
import argparse
import faulthandler
import logging
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--at-step", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--dump-after", type=float, default=0.0, help="faulthandler.dump_traceback_later seconds")
    p.add_argument("--heartbeat", type=float, default=0.0, help="user watchdog: abort if no step in N s")
    p.add_argument("--stall-warn", type=float, default=0.0, help="only warn if no step in N s")
    p.add_argument("--timing", action="store_true")
    p.add_argument("--dump-exit", action="store_true", help="faulthandler exits the process after the dump")
    p.add_argument("--noisy", action="store_true", help="scheduler + numpy input pipeline (prints warnings)")
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--progress", action="store_true", help="tqdm bar")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--dl-timeout", type=float, default=0)
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=46720)
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-secs", type=float, default=0)
    p.add_argument("--ckpt-dir", default="")
    p.add_argument("--step-sleep", type=float, default=0.05)
    p.add_argument("--batches-per-rank", default="")
    return p.parse_args()


class ToyData(Dataset):
    def __init__(self, n, fault=None, fault_idx=-1):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 32, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)
        self.fault = fault
        self.fault_idx = fault_idx

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.fault == "fifo" and i == self.fault_idx:
            # sample stored on a "remote" path that is really a FIFO nobody writes: open() blocks forever
            with open(os.environ["STALL_FIFO"], "rb") as f:
                f.read()
        return self.x[i], self.y[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)


def main_worker(rank, world, args):
    distributed = world > 1
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train").info
        warn = logging.getLogger("train").warning
    else:
        def log(msg):
            print(f"[rank{rank}] {msg}", flush=True)
        warn = log

    if args.dump_after > 0:
        print(f"[rank{rank}] faulthandler armed: dumping all threads if a step takes > {args.dump_after}s",
              flush=True)

    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    log(f"initialised world_size={world} backend={'gloo' if distributed else 'none'} pid={os.getpid()}")
    torch.manual_seed(0)
    model = Net()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    lossf = nn.CrossEntropyLoss()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5) if args.noisy else None

    n_batches = args.steps
    if args.batches_per_rank:
        n_batches = int(args.batches_per_rank.split(",")[rank])
    ds = ToyData(n_batches * 8, fault="fifo" if (args.fault == "dl_fifo" and rank == args.fault_rank) else None,
                 fault_idx=args.at_step * 8)
    dl = DataLoader(ds, batch_size=8, shuffle=False, num_workers=args.workers, timeout=args.dl_timeout)

    last_step = [time.time()]
    cur_step = [0]
    if args.heartbeat > 0:
        def hb():
            while True:
                time.sleep(1.0)
                idle = time.time() - last_step[0]
                if idle > args.heartbeat:
                    print(f"[rank{rank}] WATCHDOG: no training step completed for {idle:.0f}s "
                          f"(last finished step {cur_step[0]}), dumping stacks and aborting", flush=True)
                    faulthandler.dump_traceback(all_threads=True)
                    os.abort()
        threading.Thread(target=hb, daemon=True, name="heartbeat").start()

    if args.stall_warn > 0:
        def sw():
            warned = -1
            while True:
                time.sleep(1.0)
                idle = time.time() - last_step[0]
                if idle > args.stall_warn and warned != cur_step[0]:
                    warned = cur_step[0]
                    warn(f"no training step completed for {idle:.0f}s (last step {cur_step[0]}); "
                         f"process may be hung or a peer is slow")
        threading.Thread(target=sw, daemon=True, name="stall-warn").start()

    prefetch_q = None
    if args.fault == "thread_exc":
        # background prefetch thread that tokenises/loads the next batch
        prefetch_q = queue.Queue(maxsize=2)
        vocab = {f"tok{i}": i for i in range(100)}

        def prefetcher():
            for step, (x, y) in enumerate(dl):
                if rank == args.fault_rank and step == args.at_step:
                    key = "tok%d" % (100 + step)  # id outside the vocab built above
                    y = y + vocab[key]
                prefetch_q.put((x, y))
            prefetch_q.put(None)
        threading.Thread(target=prefetcher, daemon=True, name="prefetch").start()

        def batches():
            while True:
                item = prefetch_q.get()
                if item is None:
                    return
                yield item
        it = batches()
    else:
        it = dl

    lock = threading.Lock()
    metrics_proc = None
    if args.fault == "brokenpipe" and rank == args.fault_rank:
        # metrics forwarder sidecar: reads lines from stdin, it exits after a few lines
        metrics_proc = subprocess.Popen([sys.executable, "-c",
                                         "import sys\nfor i,l in enumerate(sys.stdin):\n"
                                         "    print('metrics-sidecar got', l.strip(), flush=True)\n"
                                         "    if i==2: sys.exit(0)"],
                                        stdin=subprocess.PIPE, text=True)

    bar = None
    if args.progress and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=n_batches, desc="train", file=sys.stderr)

    if args.dump_after > 0:
        faulthandler.dump_traceback_later(args.dump_after, repeat=False, exit=args.dump_exit)

    for step, (x, y) in enumerate(it):
        t_step = time.time()
        if args.dump_after > 0:
            faulthandler.cancel_dump_traceback_later()
            faulthandler.dump_traceback_later(args.dump_after, repeat=False, exit=args.dump_exit)
        if step == args.at_step and rank == args.fault_rank:
            if args.fault == "spin":
                # waits for a marker file from a "preprocessing job" that never writes it
                marker = "/work/rr138/ix/tmp/shard-%d.ready" % rank
                while not os.path.exists(marker):
                    time.sleep(0.5)
            elif args.fault == "deadlock":
                # non-reentrant lock taken twice: helper called while lock already held
                with lock:
                    with lock:
                        pass
            elif args.fault == "stop_self":
                os.kill(os.getpid(), 19)  # SIGSTOP, as if the process were frozen
            elif args.fault == "skip_allreduce":
                pass
            elif args.fault == "slowdown":
                pass
            elif args.fault == "cpu_burn":
                # recomputes an expensive statistic every step from here on
                pass
        t_fwd0 = time.time()
        if args.fault == "slowdown" and rank == args.fault_rank and step >= args.at_step:
            a = torch.randn(600, 600)
            for _ in range(30):
                a = torch.tanh(a @ a / 600)
        if args.fault == "cpu_burn" and rank == args.fault_rank and step >= args.at_step:
            t0 = time.process_time()
            while time.process_time() - t0 < 2.0:
                pass
        if args.noisy:
            import numpy as np
            arr = np.asarray(x.numpy(), dtype=np.float32)
            arr.setflags(write=False)
            x = torch.from_numpy(arr)  # read-only numpy buffer from the cache
            if step == 0:
                sched.step()  # scheduler stepped before the first optimizer step
        t_fwd = time.time()
        out = model(x)
        loss = lossf(out, y)
        t_fwd = time.time() - t_fwd0
        opt.zero_grad()
        loss.backward()
        opt.step()
        if distributed:
            lt = loss.detach().clone()
            if args.fault == "skip_allreduce" and rank == args.fault_rank and step >= args.at_step:
                pass  # this rank "has no metric to report" this step
            else:
                dist.all_reduce(lt)
                lt /= world
        else:
            lt = loss.detach()
        if metrics_proc is not None:
            metrics_proc.stdin.write(f"step={step} loss={lt.item():.4f}\n")
            metrics_proc.stdin.flush()
        if args.fault == "monitored" and step == args.at_step:
            if rank == args.fault_rank:
                # recompute dataset statistics before the barrier: this takes far longer than expected
                t0 = time.time()
                while time.time() - t0 < 3600:
                    time.sleep(0.2)
            dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
        if args.ckpt_dir and step and step % 10 == 0:
            if rank == 0:
                log(f"saving checkpoint step {step} -> {args.ckpt_dir}")
                t0 = time.time()
                path = os.path.join(args.ckpt_dir, f"ckpt-{step}.pt")
                sd = {"model": model.state_dict(), "opt": opt.state_dict(), "pad": torch.randn(4_000_000)}
                with open(path, "wb") as fh:  # write through our own handle (fsync'd below)
                    torch.save(sd, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.sync()
                time.sleep(6)  # slow network storage
                log(f"checkpoint saved in {time.time() - t0:.1f}s")
            if distributed:
                dist.barrier()
        if args.eval_every and step and step % args.eval_every == 0:
            log(f"step {step}: running evaluation (this can take a while)")
            t0 = time.time()
            if rank == 0:  # only rank 0 holds the validation set
                while time.time() - t0 < args.eval_secs:
                    torch.randn(300, 300) @ torch.randn(300, 300)
                    time.sleep(0.05)
            if distributed:
                dist.barrier()
            log(f"eval done in {time.time() - t0:.1f}s val_loss={lt.item() * 1.1:.4f}")
        last_step[0] = time.time()
        cur_step[0] = step
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{lt.item():.4f}")
        elif step % 2 == 0:
            if args.timing:
                log(f"step {step} loss {lt.item():.4f} fwd={t_fwd:.3f}s step_time={time.time() - t_step:.3f}s")
            else:
                log(f"step {step} loss {lt.item():.4f} t={time.time():.1f}")
        time.sleep(args.step_sleep)
    if bar is not None:
        bar.close()
    if args.dump_after > 0:
        faulthandler.cancel_dump_traceback_later()
    log("training finished")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


def spawn_entry(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    main_worker(rank, world, args)


if __name__ == "__main__":
    args = parse()
    warnings.filterwarnings("default")
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn, args), nprocs=args.spawn, join=True)
    else:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
        main_worker(rank, world, args)
