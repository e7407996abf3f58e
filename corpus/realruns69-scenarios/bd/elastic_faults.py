"""Small DDP training loop for torchrun / elastic restart experiments.

--fault selects what goes wrong, --fault-rank on which global rank, --fault-step at which step.
"""
import argparse
import concurrent.futures
import glob
import json
import logging
import math
import os
import queue
import resource
import threading
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--workdir", default="/work/rr69/bd/tmp/run")
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--noisy", action="store_true")
p.add_argument("--no-record", action="store_true")
p.add_argument("--min-len", type=int, default=8)
args = p.parse_args()

log = logging.getLogger("train")


def setup_logging(rank):
    if args.log_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(level=logging.WARNING)


def say(rank, msg):
    if args.log_style == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


class Net(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_cls=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_cls)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_shard(rank, n):
    g = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(n, 32, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return x, y


@record
def main():
    rank = int(os.environ["RANK"]) if "RANK" in os.environ else None
    if args.fault == "cache_race":
        # shared tokenizer/label cache is built by rank 0, others read it (no barrier before init)
        os.makedirs(args.workdir, exist_ok=True)
        cache = os.path.join(args.workdir, "label_cache.json")
        if rank == 0 and not os.path.exists(cache) and not os.environ.get("PREP_EXTERNAL"):
            time.sleep(1.5)
            with open(cache + ".tmp", "w") as f:
                json.dump({str(i): f"class_{i}" for i in range(10)}, f)
            os.replace(cache + ".tmp", cache)
        elif rank == args.fault_rank:
            with open(cache) as f:
                print(f"[rank{rank}] label cache: {len(json.load(f))} classes", flush=True)
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    world = dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    setup_logging(rank)
    os.makedirs(args.workdir, exist_ok=True)
    say(rank, f"init done: world_size={world} restart_count={restart} pid={os.getpid()}")
    with open(os.path.join(args.workdir, f"pid.rank{rank}"), "w") as f:
        f.write(str(os.getpid()))

    if args.noisy and rank == 0:
        warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. "
                      "Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)

    torch.manual_seed(0)
    model = Net(hidden=args.hidden)

    # ---------- resume logic ----------
    ckpt_path = os.path.join(args.workdir, "resume.pt")
    start_step = 0
    state = None
    if args.fault == "sd_mismatch" and rank == args.fault_rank:
        # this rank was given the checkpoint dir of an older experiment (hidden=128)
        old = Net(hidden=128)
        torch.save({"model": old.state_dict(), "step": 40}, ckpt_path + f".r{rank}")
        state = torch.load(ckpt_path + f".r{rank}", map_location="cpu")
        model.load_state_dict(state["model"])
        start_step = state["step"]
    if args.fault == "swallowed" and rank == args.fault_rank:
        # checkpoint from a preempted save: only first half of the bytes made it to disk
        good = os.path.join(args.workdir, f"full.r{rank}.pt")
        torch.save({"model": model.state_dict(), "optim": None, "step": 12}, good)
        blob = open(good, "rb").read()
        with open(ckpt_path + f".r{rank}", "wb") as f:
            f.write(blob[:4096])  # partial flush
        try:
            state = torch.load(ckpt_path + f".r{rank}", map_location="cpu")
            model.load_state_dict(state["model"])
        except Exception as e:  # noqa
            logging.getLogger("train").warning("could not resume from %s (%s); starting from scratch",
                                               ckpt_path + f".r{rank}", e)
            state = None

    if args.fault == "empty_shard":
        # per-rank shard of variable-length records; drop records shorter than --min-len
        g = torch.Generator().manual_seed(rank)
        hi = 6 if rank == args.fault_rank else 24  # this rank's shard holds only short records
        lengths = torch.randint(2, hi, (200,), generator=g)
        keep = (lengths >= args.min_len).nonzero().flatten()
        say(rank, f"shard {rank:05d}: {len(lengths)} records, {len(keep)} after min_len={args.min_len} filter")
        if len(keep) == 0:
            sys.exit(f"rank {rank}: no training records left in shard {rank:05d} after filtering (min_len={args.min_len})")
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)

    n = 256
    if args.fault == "early_exit" and rank == args.fault_rank:
        n = 8 * 6  # this rank's shard is smaller
    x, y = make_shard(rank, n)
    if args.fault == "nan_exit" and rank == args.fault_rank:
        x[8 * args.fault_step + 3, 5] = float("inf")  # one bad feature row in this rank's shard
    bs = 8

    vocab_path = os.path.join(args.workdir, "label_map.json")
    if args.fault == "fail_once_race":
        if rank == 0:
            time.sleep(2.0)  # rank 0 builds the label map (slow)
            with open(vocab_path + ".tmp", "w") as f:
                json.dump({str(i): f"class_{i}" for i in range(10)}, f)
            os.replace(vocab_path + ".tmp", vocab_path)
        elif rank == args.fault_rank:
            with open(vocab_path) as f:  # no barrier: races rank 0 on the first attempt
                labels = json.load(f)
            say(rank, f"loaded label map with {len(labels)} classes")
        dist.barrier()

    if args.fault == "xcpu" and rank == args.fault_rank:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        used = int(time.process_time())
        resource.setrlimit(resource.RLIMIT_CPU, (used + 3, hard))  # as inherited from a batch queue's cpu-time limit
    if args.fault == "fsize" and rank == args.fault_rank:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))

    prefetch_q = None
    if args.fault == "prefetch_thread":
        # shards are produced by the data pipeline as torch files; a background thread streams them
        sd = os.path.join(args.workdir, f"shards-r{rank}")
        os.makedirs(sd, exist_ok=True)
        for k in range(4):
            torch.save({"x": x[k * 64:(k + 1) * 64].clone(), "y": y[k * 64:(k + 1) * 64].clone()},
                       os.path.join(sd, f"part-{k:03d}.pt"))
        if rank == args.fault_rank:
            # this node's copy of part-002 came from a clone without `git lfs pull`
            with open(os.path.join(sd, "part-002.pt"), "w") as f:
                f.write("version https://git-lfs.github.com/spec/v1\n"
                        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
                        "size 18127\n")
        prefetch_q = queue.Queue(maxsize=2)

        def prefetch():
            for k in range(4):
                part = torch.load(os.path.join(sd, f"part-{k:03d}.pt"))
                for j in range(0, 64, bs):
                    prefetch_q.put((part["x"][j:j + bs], part["y"][j:j + bs]))

        threading.Thread(target=prefetch, name="shard-prefetch", daemon=True).start()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt-writer")
    pending = []
    it = range(start_step, args.steps)
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    step_i = 0
    for step in it:
        i = (step_i * bs) % n
        step_i += 1
        if args.fault == "early_exit" and rank == args.fault_rank and i + bs > n - 1:
            say(rank, f"epoch finished after {step_i - 1} steps, leaving training loop")
            return  # shard exhausted: falls out of main and exits 0
        xb, yb = x[i:i + bs], y[i:i + bs]
        if prefetch_q is not None:
            xb, yb = prefetch_q.get(timeout=15)
        if args.fault == "mismatch_metrics" and step == args.fault_step:
            pass
        out = ddp(xb)
        loss = F.cross_entropy(out, yb)
        if args.fault == "nan_exit" and rank == args.fault_rank and not math.isfinite(loss.item()):
            print(f"[rank{rank}] step {step}: loss is {loss.item()}, aborting run", flush=True)
            sys.stdout.flush()
            os._exit(3)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.fault == "xcpu" and rank == args.fault_rank:
            t0 = time.time()
            while time.time() - t0 < 0.5:  # per-rank eval of extra metrics (cpu heavy)
                torch.randn(200, 200) @ torch.randn(200, 200)
        # metrics
        metrics = torch.tensor([loss.item(), float((out.argmax(1) == yb).float().mean())])
        if args.fault == "mismatch_metrics" and rank == args.fault_rank and step >= args.fault_step:
            # this rank also tracks grad-norm after warmup: metrics tensor grows
            gn = sum(p.grad.norm() ** 2 for p in ddp.parameters()) ** 0.5
            metrics = torch.cat([metrics, gn.detach().reshape(1)])
        dist.all_reduce(metrics)
        metrics /= world
        if rank == 0 and step % 2 == 0:
            msg = f"step {step} loss {metrics[0]:.4f} acc {metrics[1]:.3f}"
            if args.log_style == "tqdm":
                it.set_postfix(loss=f"{metrics[0]:.3f}")
            else:
                say(rank, msg)
        if args.fault == "monitored" and step == args.fault_step:
            if rank == args.fault_rank:
                # waits for the shared eval lock held by a stale job
                lock = os.path.join(args.workdir, "eval.lock")
                open(lock, "w").close()
                while os.path.exists(lock):
                    time.sleep(0.5)
            dist.monitored_barrier(timeout=timedelta(seconds=8))
        if args.fault in ("thread_ckpt", "fsize") and step % 5 == 4:
            d = args.workdir if args.fault == "fsize" else os.path.join(args.workdir, f"ckpt-r{rank}" if rank != args.fault_rank else "ckpts/run7")
            path = os.path.join(d, f"step{step}.pt")
            sd = {k: v.clone() for k, v in ddp.module.state_dict().items()}
            if args.fault == "fsize":
                sd["opt"] = opt.state_dict()
                sd["pad"] = torch.zeros(20000)
                if rank == args.fault_rank:
                    say(rank, f"saving checkpoint {path}")
                    with open(path, "wb") as fh:
                        torch.save(sd, fh)
            else:
                os.makedirs(os.path.join(args.workdir, f"ckpt-r{rank}"), exist_ok=True)
                pending.append(pool.submit(torch.save, sd, path))
        time.sleep(args.sleep)
        if args.fault == "longname" and rank == 0 and step == args.fault_step:
            # checkpoint name encodes the full run config so sweeps are self-describing
            cfg = {"model": "mlp3", "hidden": args.hidden, "lr": 0.05, "momentum": 0.9, "bs": bs,
                   "world": world, "layers": [32, args.hidden, args.hidden, 10],
                   "aug": ["jitter", "mixup", "cutmix", "label_smoothing"] * 6, "seed": 0}
            tag = "_".join(f"{k}={v}" for k, v in cfg.items()).replace(" ", "").replace("'", "")
            d = os.path.join(args.workdir, "sweep")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, f"ckpt_{tag}_step{step}.pt")
            say(rank, f"saving {path}")
            torch.save(ddp.module.state_dict(), path)
    for fut in pending:
        fut.result()
    if args.fault == "swallowed" and rank == args.fault_rank:
        say(rank, f"training done; resumed_from={state['step']}")
    dist.barrier()
    say(rank, "training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.no_record:
        main.__wrapped__()
    else:
        main()
