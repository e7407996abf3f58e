"""Tiny DDP language-model training with selectable real faults on one rank.

Usage (under torchrun / python -m torch.distributed.run):
  ddp_fault.py --fault KIND --fault-rank R --fault-step S [--steps N] [--pg-timeout SEC]
"""
import argparse, os, sys, time, json, math, random, signal, datetime, logging, traceback

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader
from torch.distributed.elastic.multiprocessing.errors import record

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--fault2", default="none")
p.add_argument("--fault2-rank", type=int, default=0)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--pg-timeout", type=float, default=20)
p.add_argument("--workdir", default="/work/rr78/cb/work")
p.add_argument("--log-style", default="print", choices=["print", "logging"])
p.add_argument("--tqdm", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--cleanup-barrier", action="store_true",
               help="on exception: log traceback to stdout and wait at a final barrier")
p.add_argument("--noise", action="store_true")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--run-name", default="gpt-tiny")
p.add_argument("--resume", default=None)
p.add_argument("--step-sleep", type=float, default=0.15)
p.add_argument("--no-record", action="store_true")
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--ckpt-fileobj", action="store_true", help="write checkpoints through a Python file object")
p.add_argument("--prep-lock", default=None, help="lock file guarding the shared preprocessing cache")
args = p.parse_args()

VOCAB, SEQ, DIM, BS = 96, 32, 48, 8

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info
    warn = log.warning
else:
    say = lambda m: print(f"[rank{rank}] {m}")
    warn = lambda m: print(f"[rank{rank}] WARNING {m}")


def fault_here(kind, step):
    return ((args.fault == kind and rank == args.fault_rank and step == args.fault_step) or
            (args.fault2 == kind and rank == args.fault2_rank and step == args.fault_step))


def fault_on(kind):
    return (args.fault == kind and rank == args.fault_rank) or (args.fault2 == kind and rank == args.fault2_rank)


class TokenShard(Dataset):
    """Pre-tokenized shard: one .npy of token ids per rank plus aux features."""
    def __init__(self, path, aux_path):
        self.tok = np.load(path)
        self.aux = torch.from_numpy(np.load(aux_path))
        self.path = path
        self.open_handles = []

    def __len__(self):
        return len(self.tok)

    def __getitem__(self, i):
        row = self.tok[i]
        if fault_on("nofile"):
            # per-sample side files (document metadata); handle never closed
            fh = open(os.path.join(os.path.dirname(self.path), "meta", f"doc{i % 50:05d}.json"))
            self.open_handles.append(fh)
            json.load(fh); fh.seek(0)
        if fault_on("fifo") and i == args.fault_step * BS:
            with open(os.path.join(os.path.dirname(self.path), "remote_blob.bin"), "rb") as fh:
                fh.read(16)
        if fault_on("collate") and i == args.fault_step * BS + 5:
            row = row[: SEQ - 6]   # short document: packer did not pad the tail of the shard
        x = torch.from_numpy(row[:-1].astype(np.int64))
        y = torch.from_numpy(row[1:].astype(np.int64))
        return x, y, self.aux[i]


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.aux = nn.Linear(8, DIM)
        self.mix = nn.Linear(DIM, DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, x, aux):
        h = self.emb(x)
        if args.fault in ("anomaly",):
            h = h / h.norm(dim=-1, keepdim=True)   # unit-normalise token vectors
        h = h + self.aux(aux).unsqueeze(1)
        h = torch.tanh(self.mix(h))
        return self.head(h)


def make_data(d):
    os.makedirs(d, exist_ok=True)
    os.makedirs(args.workdir, exist_ok=True)
    g = np.random.default_rng(1234 + rank)
    n = BS * (args.steps + 2)
    tok = g.integers(1, VOCAB, size=(n, SEQ + 1)).astype(np.int32)
    if fault_on("index"):
        # this shard was tokenized with the 128k-entry tokenizer: ids beyond the model vocab
        tok[args.fault_step * BS + 3, 7] = VOCAB + 31
    if fault_on("anomaly"):
        tok[args.fault_step * BS + 2, :] = 0   # an all-padding row
    aux = g.standard_normal((n, 8))
    aux = aux if fault_on("dtype") else aux.astype(np.float32)
    np.save(os.path.join(d, f"tokens_r{rank}.npy"), tok)
    np.save(os.path.join(d, f"aux_r{rank}.npy"), aux)
    if fault_on("nofile"):
        os.makedirs(os.path.join(d, "meta"), exist_ok=True)
        for i in range(50):
            with open(os.path.join(d, "meta", f"doc{i:05d}.json"), "w") as f:
                json.dump({"doc": i, "src": "cc-2024"}, f)
    return os.path.join(d, f"tokens_r{rank}.npy"), os.path.join(d, f"aux_r{rank}.npy")


def collate(batch):
    xs, ys, aux = zip(*batch)
    return torch.stack(xs), torch.stack(ys), torch.stack(aux)


def _winit(wid):
    with open(os.path.join(args.workdir, f"worker_r{rank}_{wid}.pid"), "w") as f:
        f.write(str(os.getpid()))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    if args.prep_lock:
        if int(os.environ.get("LOCAL_RANK", 0)) == 0:
            from filelock import FileLock
            say(f"acquiring preprocessing lock {args.prep_lock}")
            with FileLock(args.prep_lock, timeout=8):
                say("building token cache")
        dist.barrier()
    datadir = os.path.join(args.workdir, "data")
    tp, ap = make_data(datadir)
    ds = TokenShard(tp, ap)
    dl = DataLoader(ds, batch_size=BS, shuffle=False, num_workers=args.workers,
                    timeout=args.dl_timeout, worker_init_fn=_winit if args.workers else None, collate_fn=collate if args.fault != "collate" else None)
    model = TinyLM()
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if args.resume:
        sd = torch.load(os.path.join(args.resume, f"optim_rank{rank}.pt"), weights_only=True)
        opt.load_state_dict(sd)
        say(f"resumed optimizer state from {args.resume}")
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
    say(f"world_size={world} params={sum(p.numel() for p in model.parameters())} steps={args.steps}")
    it = dl
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, total=args.steps, desc="train", file=sys.stderr)
    t0 = time.time()
    step = 0
    try:
        for step, batch in enumerate(it):
            if step >= args.steps:
                break
            if args.monitored_barrier:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=8))
            if args.fault == "collate":
                x, y, aux = batch
            else:
                x, y, aux = batch
            if fault_here("sigkill", step) or fault_here("segv", step) or fault_here("dlkill", step):
                with open(os.path.join(args.workdir, f"at_step_r{rank}"), "w") as f:
                    f.write(str(os.getpid()))
            if fault_here("segv", step):
                import ctypes
                # native fast-path for n-gram statistics (bad pointer from a stale buffer)
                stale = ctypes.cast(0x10, ctypes.POINTER(ctypes.c_int64))
                counts = [stale[i] for i in range(64)]
            if fault_here("oom", step):
                # hard-negative mining: full similarity matrix over the token cache
                cache = torch.randn(BS * SEQ * 64, DIM)
                proj = torch.randn(DIM, DIM) / DIM ** 0.5
                for _ in range(150):   # refresh cached keys through the projection
                    cache = torch.tanh(cache @ proj)
                sim = cache.repeat(4, 1) @ cache.repeat(4, 1).T
                x = x[: sim.shape[0]]
            if fault_here("missing", step):
                nxt = os.path.join(datadir, f"tokens_r{rank}_part{step:03d}.npy")
                extra = np.load(nxt)
            if fault_here("keyerror", step):
                eval_batch = {"input_ids": x, "targets": y}
                with torch.no_grad():
                    ev = F.cross_entropy(ddp.module(eval_batch["input_ids"], aux).reshape(-1, VOCAB),
                                         eval_batch["labels"].reshape(-1))
            logits = ddp(x, aux)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
            opt.step(); sched.step()
            if args.noise and rank == args.fault_rank and step in (2, 3):
                warn(f"grad norm {gn:.2f} exceeds clip threshold 1.0; gradients clipped")
            lt = loss.detach().clone()
            dist.all_reduce(lt)
            if rank == 0:
                say(f"step {step:3d} | loss {lt.item()/world:.4f} | lr {sched.get_last_lr()[0]:.2e} | gnorm {gn:.3f} | {time.time()-t0:.1f}s")
            if args.ckpt_every and (step + 1) % args.ckpt_every == 0 and rank == 0:
                if args.fault == "ckpt-barrier":
                    dist.barrier()   # make sure every rank finished the step before snapshotting
                cdir = args.ckpt_dir or os.path.join(args.workdir, "ckpt")
                os.makedirs(cdir, exist_ok=True) if not os.path.isdir(cdir) else None
                name = f"{args.run_name}-step{step+1:06d}.pt"
                state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}
                if args.ckpt_fileobj:
                    with open(os.path.join(cdir, name), "wb") as fh:
                        torch.save(state, fh)
                else:
                    torch.save(state, os.path.join(cdir, name))
                say(f"saved checkpoint {os.path.join(cdir, name)}")
            time.sleep(args.step_sleep)
    except Exception:
        if not args.cleanup_barrier:
            raise
        # write the traceback to the run log and wait for the others before tearing down
        print(f"[rank{rank}] training failed at step {step}:\n" + traceback.format_exc())
        dist.barrier()
        dist.destroy_process_group()
        sys.exit(1)
    dist.barrier()
    say("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    (main if args.no_record else record(main))()
