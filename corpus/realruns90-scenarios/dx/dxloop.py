"""Custom multi-rank training loop (gloo/CPU) with late, single-rank bugs selectable by flags.

Usage: torchrun --nproc-per-node N dxloop.py --fault NAME --fault-rank R --fault-step S
       python dxloop.py --spawn N ...        (torch.multiprocessing.spawn)
       python dxloop.py ...                  (single process, world size 1)
"""
import argparse
import json
import logging
import math
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

VOCAB = 96
SEQ = 16
NCLS = 5

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=12)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--eval-every", type=int, default=10)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--ddp", action="store_true")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true", help="emit the usual harmless warnings")
p.add_argument("--workdir", default="/work/rr90/dx/work")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=39311)
args = p.parse_args()


class TokDS(Dataset):
    """Synthetic token classification data; each rank sees its own shard."""

    def __init__(self, n, rank, split="train"):
        g = torch.Generator().manual_seed(1000 + rank * 7 + (0 if split == "train" else 1))
        self.x = torch.randint(1, VOCAB, (n, SEQ), generator=g)
        self.y = (self.x.sum(1) % NCLS)
        self.rank = rank
        self.split = split
        self.records = [{"input_ids": self.x[i], "attention_mask": torch.ones(SEQ, dtype=torch.long),
                         "label": int(self.y[i])} for i in range(n)]
        self.open_files = []

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        rec = dict(self.records[i])
        return rec


class Net(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, NCLS)
        self.aux_head = nn.Linear(hidden, NCLS)

    def forward(self, ids, mask, use_aux=True):
        h = self.emb(ids) * mask.unsqueeze(-1)
        h = h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        h = self.mlp(h)
        out = self.head(h)
        if use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out


def setup_log(rank):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        lg = logging.getLogger("train")
        return lg.info
    return lambda m: print(f"[rank{rank}] {m}", flush=True)


def main(rank, world):
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.pg_timeout))
    log = setup_log(rank)
    torch.manual_seed(0)
    os.makedirs(args.workdir, exist_ok=True)
    F_, FR, FS = args.fault, args.fault_rank, args.fault_step

    if args.noise:
        warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
        if rank == 0:
            log("WARNING: NaN/Inf check skipped for CPU tensors; grad clipping active (max_norm=1.0)")

    n_train = args.bs * args.steps
    if F_ == "uneven_shards" and rank == FR:
        n_train += args.bs  # this rank got the remainder files -> one more batch than the others
    train = TokDS(n_train, rank)
    n_val = 37 if F_ == "metric_shape" and rank == FR else 32
    val = TokDS(n_val, rank, "val")

    if F_ in ("eval_empty", "eval_empty_shuffle") and rank == FR:
        # eval shard built by slicing a list of 3*32 files with ceil(len/world) -> last rank gets nothing
        val.records = val.records[len(val.records):]
    if F_ == "key_missing" and rank == FR:
        # shard from the older export: records without attention_mask after a point
        for r in train.records[FS * args.bs:]:
            del r["attention_mask"]
    if F_ == "val_assert" and rank == FR:
        val.records[19]["label"] = -1  # unlabelled example leaked into this rank's eval shard
    if F_ == "emb_oob" and rank == FR:
        # tokenizer later gained a special token (<eos>=VOCAB) but the embedding was not resized
        train.records[FS * args.bs + 3]["input_ids"] = torch.cat(
            [train.records[FS * args.bs + 3]["input_ids"][:-1], torch.tensor([VOCAB])])

    if F_ == "none_collate" and rank == FR:
        bad = set(range(FS * args.bs, FS * args.bs + 2))
        base_get = train.__class__.__getitem__

        class Lossy(TokDS):
            def __getitem__(self, i):
                if i in bad:
                    return None  # "file unreadable, skip" path returns None
                return base_get(self, i)
        train.__class__ = Lossy

    if F_ == "worker_pid" and rank == FR:
        pid_path = os.path.join(args.workdir, f"worker_pid_rank{rank}")
        slow_idx = FS * args.bs

        class Decoding(TokDS):
            def __getitem__(self, i):
                if i == slow_idx:
                    with open(pid_path, "w") as f:
                        f.write(str(os.getpid()))
                    _ = [torch.linalg.svd(torch.randn(64, 64)) for _ in range(400)]  # heavy decode
                return TokDS.__getitem__(self, i)
        train.__class__ = Decoding

    if F_ == "fd_leak" and rank == FR:
        shard_path = os.path.join(args.workdir, f"shard_r{rank}.jsonl")
        with open(shard_path, "w") as f:
            for r in train.records:
                f.write(json.dumps({"label": r["label"]}) + "\n")

        class Leaky(TokDS):
            def __getitem__(self, i):
                fh = open(shard_path)  # handle kept for "lazy" reading, never closed
                self.open_files.append(fh)
                return TokDS.__getitem__(self, i)
        train.__class__ = Leaky

    if world > 1:
        sampler = DistributedSampler(train, num_replicas=1, rank=0, shuffle=False)
    else:
        sampler = None
    tl = DataLoader(train, batch_size=args.bs, sampler=sampler, num_workers=args.workers, shuffle=False)
    vl = DataLoader(val, batch_size=args.bs, shuffle=(F_ == "eval_empty_shuffle"), num_workers=0)

    hidden = 64
    model = Net(hidden)
    if F_ == "ddp_model_mismatch" and rank == FR:
        model = Net(48)
    if args.ddp and world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.noise)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    total = args.steps
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=total)

    it = tl
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(tl, desc=f"rank{rank} train", disable=False, mininterval=0, file=sys.stderr)

    step = 0
    t0 = time.time()
    for batch in it:
        ids, y = batch["input_ids"], batch["label"]
        mask = batch["attention_mask"]
        use_aux = True
        if F_ == "ddp_unused" and rank == FR and step == FS:
            use_aux = False  # aux head disabled when the batch has no auxiliary targets
        out = model(ids, mask, use_aux=use_aux) if not isinstance(model, nn.parallel.DistributedDataParallel) \
            else model(ids, mask, use_aux)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()

        if not args.ddp and world > 1:
            # manual gradient averaging
            if F_ == "skip_collective" and rank == FR and step == FS:
                log(f"step {step}: all tokens masked in this batch, skipping gradient sync")
            else:
                for prm in model.parameters():
                    dist.all_reduce(prm.grad)
                    prm.grad /= world
            lt = loss.detach().clone().reshape(1)
            if world > 1:
                dist.all_reduce(lt)
            gl = lt.item() / world
        else:
            gl = loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        if step % 5 == 0 and (rank == 0 or F_.startswith("uneven")):
            log(f"step {step}/{total} loss {gl:.4f} lr {sched.get_last_lr()[0]:.2e} "
                f"({(time.time()-t0)/step:.3f}s/it)")

        if F_ == "file_race" and step == FS:
            stats_path = os.path.join(args.workdir, f"label_stats_step{step}.pt")
            if rank == 0:
                counts = torch.zeros(NCLS)
                for r in train.records:
                    counts[r["label"]] += 1
                    _ = torch.linalg.svd(torch.randn(24, 24))  # slow-ish pass over the data
                torch.save(counts, stats_path)
            elif rank == FR:
                counts = torch.load(stats_path)  # no barrier before reading rank 0's file
                log(f"class weights {counts}")

        if F_ == "sigkill" and rank == FR and step == FS:
            with open(os.path.join(args.workdir, f"pid_rank{rank}"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(0.5)

        if F_ == "cpu_oom" and rank == FR and step == FS:
            # n-gram co-occurrence table sized from the tokenizer length typo'd as 50257*8
            ncls = 50257 * 8
            cooc = torch.zeros(ncls, ncls // 16)
            log(f"cooc table {tuple(cooc.shape)}")

        if F_ in ("disk_full", "ckpt_save") and rank == 0 and step == FS:
            ck = os.path.join(args.workdir, "ckpt")
            os.makedirs(ck, exist_ok=True)
            target = os.path.join(ck, f"step{step}.pt")
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                     "pad": torch.randn(200000)}
            torch.save(state, target)
            log(f"saved {target}")

        if F_ == "cholesky" and rank == FR and step == FS:
            # whitening of hidden features for the feature-alignment regulariser
            with torch.no_grad():
                m = model.module if hasattr(model, "module") else model
                h = m.mlp(m.emb(ids).mean(1))
                h = h[:, :8].repeat(1, 8)  # only first 8 dims in this config
                cov = (h - h.mean(0)).T @ (h - h.mean(0)) / h.shape[0]
                Lc = torch.linalg.cholesky(cov)
                log(f"whitening ok {Lc.shape}")

        if F_ == "lambda_ckpt" and rank == FR and step == FS:
            state = {"model": model.state_dict(), "step": step,
                     "cfg": {"lr": 3e-3, "warmup_fn": lambda s: min(1.0, s / 100)}}
            torch.save(state, os.path.join(args.workdir, f"rank{rank}_step{step}.pt"))

        if F_ == "ckpt_reload" and rank == FR and step == FS:
            # evaluator rank refreshes its EMA copy from the last snapshot on disk
            sd = torch.load(os.path.join(args.workdir, "ema_last.pt"))
            m = model.module if hasattr(model, "module") else model
            m.load_state_dict(sd)
            log("EMA weights refreshed")

        if F_ == "ema_mismatch" and rank == FR and step == FS:
            ema = Net(hidden=int(os.environ.get("EMA_HIDDEN", "96")))
            m = model.module if hasattr(model, "module") else model
            ema.load_state_dict(m.state_dict())

        if step % args.eval_every == 0:
            evaluate(model, vl, rank, world, step, log)

    if F_ == "monitored" and world > 1:
        if rank == FR:
            # rank FR writes its predictions dump before joining (slow: pure-python loop)
            acc = 0.0
            for i in range(40_000_000):
                acc += math.sin(i)
            log(f"dump checksum {acc:.3f}")
        dist.monitored_barrier(timeout=timedelta(seconds=6))
    if world > 1:
        dist.barrier()
    log(f"training finished: {step} steps in {time.time()-t0:.1f}s")
    if world > 1:
        dist.destroy_process_group()


def evaluate(model, vl, rank, world, step, log):
    model.eval()
    tot_loss, correct, n, nb = 0.0, 0, 0, 0
    preds_buf = torch.zeros(args.bs, dtype=torch.long)
    with torch.no_grad():
        for i, b in enumerate(vl):
            out = model(b["input_ids"], b["attention_mask"])
            y = b["label"]
            if args.fault == "val_assert":
                assert (y >= 0).all(), f"eval batch {i}: labels must be non-negative"
            tot_loss += F.cross_entropy(out, y, reduction="sum").item()
            if args.fault == "metric_shape":
                preds_buf[:] = out.argmax(-1)
                correct += int((preds_buf == y).sum())
            else:
                correct += int((out.argmax(-1) == y).sum())
            n += y.numel()
            nb += 1
    avg = tot_loss / n
    acc = correct / n
    t = torch.tensor([avg, acc])
    if world > 1:
        dist.all_reduce(t)
        t /= world
    if rank == 0:
        log(f"eval @ step {step}: val_loss {t[0]:.4f} val_acc {t[1]:.3f}")
    model.train()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world)


if __name__ == "__main__":
    torch.set_num_threads(1)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main(0, 1)
