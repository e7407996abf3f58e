"""Small char-level LM training loop with a DataLoader, single process or torchrun (DDP, gloo).

Used for runs stopped from outside (timeout -s TERM/INT/HUP), data-loader deadlocks, lock waits
and slow-but-healthy runs. Flags select the fault.
"""
import argparse
import faulthandler
import logging
import os
import subprocess
import sys
import threading
import time
import warnings
from datetime import timedelta

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "loader-deadlock", "stale-lock", "eval-subprocess", "eval-pause", "slow-rank"])
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--flusher-epoch", type=int, default=0)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--pg-timeout", type=float, default=30)
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--dump-after", type=float, default=0)
p.add_argument("--dump-repeat", action="store_true")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--eval-timeout", type=float, default=20)
p.add_argument("--outdir", default="/tmp/hc_out/steady")
p.add_argument("--cache-dir", default="/tmp/hc_out/steady_cache")
p.add_argument("--lock-timeout", type=float, default=20)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--warn", action="store_true", help="emit the usual deprecation/user warnings")
args = p.parse_args()

RANK = int(os.environ.get("RANK", 0))
WORLD = int(os.environ.get("WORLD_SIZE", 1))
DIST = "RANK" in os.environ

if args.use_logging:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s [rank{RANK}] %(name)s - %(message)s")
    log = logging.getLogger("trainer").info
else:
    def log(m):
        print((f"[rank{RANK}] " if DIST else "") + m, flush=True)

TEXT = ("the quick brown fox jumps over the lazy dog. " * 50 + "pack my box with five dozen liquor jugs. " * 40)
VOCAB = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(VOCAB)}

# shared state used by the metrics flusher thread and the dataset (stats of how often a sample was read)
_stats_lock = threading.Lock()
_sample_hits = {}


def metrics_flusher():
    # background thread: periodically writes sample statistics; holds the lock while serialising
    while True:
        with _stats_lock:
            snapshot = dict(_sample_hits)
            time.sleep(0.2)  # json dump of a big dict under the lock
        time.sleep(0.01)


class CharDataset(Dataset):
    def __init__(self, block=32):
        self.data = torch.tensor([STOI[c] for c in TEXT], dtype=torch.long)
        self.block = block

    def __len__(self):
        return len(self.data) - self.block - 1

    def __getitem__(self, i):
        if args.fault == "loader-deadlock":
            with _stats_lock:  # lock may have been held by the flusher thread at fork time
                _sample_hits[i] = _sample_hits.get(i, 0) + 1
        chunk = self.data[i:i + self.block + 1]
        return chunk[:-1], chunk[1:]


class TinyLM(nn.Module):
    def __init__(self, v, d=64):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, v)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def prepare_cache():
    """Rank-local tokenised cache, guarded by a file lock (as datasets/transformers do)."""
    from filelock import FileLock
    os.makedirs(args.cache_dir, exist_ok=True)
    lock_path = os.path.join(args.cache_dir, "tokenized_v2.arrow.lock")
    log(f"acquiring cache lock {lock_path}")
    with FileLock(lock_path, timeout=args.lock_timeout):
        path = os.path.join(args.cache_dir, "tokenized_v2.pt")
        if not os.path.exists(path):
            torch.save(torch.tensor([STOI[c] for c in TEXT]), path)
    log("cache ready")


EVAL_SCRIPT = r'''
import sys, os
print("eval: loading checkpoint", sys.argv[1], flush=True)
if os.path.exists(sys.argv[2]):
    print(f"eval: {sys.argv[2]} exists, overwrite? [y/N] ", end="", flush=True)
    ans = sys.stdin.readline()  # asks before overwriting previous results
    if not ans.strip().lower().startswith("y"):
        sys.exit(0)
print("eval: perplexity 3.21", flush=True)
open(sys.argv[2], "w").write('{"ppl": 3.21}')
'''


def run_eval(step, ckpt):
    res = os.path.join(args.outdir, "eval_results.json")
    script = os.path.join(args.outdir, "eval_ckpt.py")
    with open(script, "w") as f:
        f.write(EVAL_SCRIPT)
    stdin = subprocess.PIPE if args.fault == "eval-subprocess" else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, script, ckpt, res], stdin=stdin, text=True)
    proc.wait(timeout=args.eval_timeout)
    log(f"eval at step {step} finished with code {proc.returncode}")


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.dump_after:
        faulthandler.dump_traceback_later(args.dump_after, repeat=args.dump_repeat, exit=False)
    if DIST:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        log(f"initialized gloo process group rank {RANK}/{WORLD}")
    if args.warn:
        warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", UserWarning)
    if args.fault == "stale-lock":
        prepare_cache()
    os.makedirs(args.outdir, exist_ok=True)
    ds = CharDataset()
    sampler = None
    if DIST:
        sampler = torch.utils.data.distributed.DistributedSampler(ds, shuffle=True)
    dl = DataLoader(ds, batch_size=32, shuffle=sampler is None, sampler=sampler, num_workers=args.workers,
                    timeout=args.loader_timeout, persistent_workers=False,
                    multiprocessing_context="fork" if args.workers else None)
    model = TinyLM(len(VOCAB))
    if DIST:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    if args.warn:
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=50)
        sched.step()
    log(f"dataset {len(ds)} samples, {len(dl)} batches/epoch, vocab {len(VOCAB)}, workers {args.workers}")
    bar = None
    if args.progress and RANK == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="Training", ncols=100)
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        if args.fault == "loader-deadlock" and epoch == args.flusher_epoch:
            log("starting sample-statistics flusher thread")
            threading.Thread(target=metrics_flusher, daemon=True, name="metrics-flusher").start()
        for x, y in dl:
            if args.fault == "slow-rank" and RANK == args.fault_rank:
                time.sleep(args.step_sleep * 15)
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            time.sleep(args.step_sleep)
            step += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}")
            if step % 20 == 0:
                el = time.time() - t0
                msg = f"epoch {epoch} step {step}/{args.steps} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr 3.0e-03 {el / step:.3f}s/it"
                if bar is not None:
                    bar.write(msg)
                else:
                    log(msg)
            if args.eval_every and step % args.eval_every == 0 and RANK == 0:
                ckpt = os.path.join(args.outdir, f"step{step}.pt")
                torch.save((model.module if DIST else model).state_dict(), ckpt)
                log(f"saved {ckpt}; running evaluation")
                if args.fault == "eval-pause":
                    te = time.time()
                    with torch.no_grad():
                        tot = 0.0
                        for k, (xv, yv) in enumerate(DataLoader(ds, batch_size=64)):
                            lv = model(xv)
                            tot += nn.functional.cross_entropy(lv.reshape(-1, lv.size(-1)), yv.reshape(-1)).item()
                            time.sleep(0.15)
                            if k == 60:
                                break
                    log(f"eval step {step}: val_loss {tot / 61:.4f} ({time.time() - te:.1f}s)")
                else:
                    run_eval(step, ckpt)
            if DIST and args.eval_every and step % args.eval_every == 0:
                import torch.distributed as dist
                dist.barrier()
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    if bar is not None:
        bar.close()
    log(f"finished {step} steps in {time.time() - t0:.1f}s, final loss {loss.item():.4f}")
    if DIST:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
