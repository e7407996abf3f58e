"""Tiny DDP (gloo, CPU) language-model training loop with lots of realistic noise.

--noise selects benign-but-alarming behaviours, --fault selects a real failure,
--fault-rank / --fault-step choose where it happens.
Launch with torchrun, `--spawn N` (torch.multiprocessing.spawn) or plain python (1 process).
"""
import argparse
import argparse as _ap
import faulthandler
import json
import logging
import math
import os
import sqlite3
import sys
import threading
import time
import traceback
import urllib.request
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler

VOCAB = 96
SEQ = 16


def get_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--run-dir", required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--n-samples", type=int, default=256)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--ckpt-every", type=int, default=20)
    p.add_argument("--noise", default="")
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=0)
    p.add_argument("--fault-step", type=int, default=15)
    p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--resume", default="")
    p.add_argument("--reload-best", action="store_true")
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=37551)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--tracker-url", default="http://127.0.0.1:9/api/v1/metrics")
    return p.parse_args(argv)


# ----------------------------------------------------------------------------- logging
class Log:
    def __init__(self, rank, style):
        self.rank = rank
        self.style = style
        if style == "logging":
            logging.basicConfig(
                level=logging.INFO,
                format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
                stream=sys.stdout,
            )
        self.lg = logging.getLogger("trainer")

    def info(self, msg):
        if self.style == "logging":
            self.lg.info(msg)
        else:
            print(f"[rank{self.rank}] {msg}", flush=True)

    def warning(self, msg, exc_info=False):
        if self.style == "logging":
            self.lg.warning(msg, exc_info=exc_info)
        else:
            print(f"[rank{self.rank}] WARNING {msg}", flush=True)
            if exc_info:
                traceback.print_exc()
                sys.stderr.flush()

    def error(self, msg, exc_info=False):
        if self.style == "logging":
            self.lg.error(msg, exc_info=exc_info)
        else:
            print(f"[rank{self.rank}] ERROR {msg}", flush=True)
            if exc_info:
                traceback.print_exc()
                sys.stderr.flush()


def stack_showwarning(message, category, filename, lineno, file=None, line=None):
    """Project-wide warning hook: print the warning with the stack that produced it."""
    out = sys.stderr
    out.write(warnings.formatwarning(message, category, filename, lineno, line))
    out.write("Warning raised from:\n")
    out.write("".join(traceback.format_stack()[:-2][-4:]))
    out.flush()


# ----------------------------------------------------------------------------- data
def make_data(data_dir, n, fault, fault_rank, world, noise, batch=8, fault_step=15):
    """Write one JSON file per sample (a sequence that follows a simple rule)."""
    os.makedirs(data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(n):
        start = int(torch.randint(0, VOCAB, (1,), generator=g))
        stride = 1 + i % 3
        toks = [(start + stride * k) % VOCAB for k in range(SEQ + 1)]
        rec = {"id": i, "tokens": toks}
        path = os.path.join(data_dir, f"sample_{i:05d}.json")
        text = json.dumps(rec)
        if "skip-corrupt" in noise and i in (37, 110, 181):
            text = text[: len(text) // 2]  # truncated upload
        if fault == "worker-bug" and i == (world * batch * (fault_step - 1) + fault_rank + world * 3) % n:
            # sample converted by a newer export script: different schema
            rec = {"id": i, "input_ids": toks, "schema": 2}
            text = json.dumps(rec)
        if fault == "vocab-oob" and i % world == fault_rank and i >= 160 and i % 7 == 0:
            rec = {"id": i, "tokens": [t + VOCAB + 4 for t in toks]}  # tokenised with the new 128-token vocab
            text = json.dumps(rec)
        with open(path, "w") as f:
            f.write(text)
    with open(os.path.join(data_dir, "meta.json"), "w") as f:
        json.dump({"n": n, "vocab": VOCAB, "seq": SEQ}, f)


class JsonSeqDataset(Dataset):
    def __init__(self, data_dir, n, noise, log):
        self.data_dir = data_dir
        self.mirror_dir = data_dir.rstrip("/") + "_mirror"
        self.n = n
        self.noise = noise
        self.log = log

    def __len__(self):
        return self.n

    def _read(self, i):
        if "retry-read" in self.noise and i % 29 == 3:
            # prefer the node-local mirror; fall back to the shared copy
            try:
                with open(os.path.join(self.mirror_dir, f"sample_{i:05d}.json")) as f:
                    return json.load(f)
            except OSError:
                self.log.warning(f"read of sample {i} from local mirror failed, retrying from shared storage",
                                 exc_info=True)
        with open(os.path.join(self.data_dir, f"sample_{i:05d}.json")) as f:
            return json.load(f)

    def __getitem__(self, i):
        try:
            rec = self._read(i)
        except json.JSONDecodeError:
            if "skip-corrupt" in self.noise:
                self.log.warning(f"skipping corrupt sample {i}; substituting sample {(i + 1) % self.n}",
                                 exc_info=True)
                rec = self._read((i + 1) % self.n)
            else:
                raise
        toks = torch.tensor(rec["tokens"], dtype=torch.long)
        return toks[:-1], toks[1:]


# ----------------------------------------------------------------------------- model
class TinyLM(nn.Module):
    def __init__(self, hidden, extra_head=False, lambda_act=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.pos = nn.Parameter(torch.zeros(SEQ, hidden))
        self.mix = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, VOCAB)
        if lambda_act:
            self.act = lambda x: F.gelu(x, approximate="tanh")
        else:
            self.act = nn.GELU()
        if extra_head:
            self.aux_head = nn.Linear(hidden, 4)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        h = h + self.act(self.mix(torch.cumsum(h, dim=1) / torch.arange(1, x.shape[1] + 1).view(1, -1, 1)))
        return self.head(h)


class MetricsWriter:
    def __init__(self, path):
        self.f = open(path, "a")

    def write(self, rec):
        self.f.write(json.dumps(rec) + "\n")

    def close(self):
        self.f.close()

    def __del__(self):
        self.f.write(json.dumps({"event": "writer_closed"}) + "\n")
        self.f.flush()


_KEEP = []


# ----------------------------------------------------------------------------- main worker
def worker(local_rank, args, world_from_spawn=0):
    if world_from_spawn:
        os.environ.update(RANK=str(local_rank), WORLD_SIZE=str(world_from_spawn), LOCAL_RANK=str(local_rank),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(1234)
    noise = set(args.noise.split(",")) if args.noise else set()
    log = Log(rank, args.log_style)
    if "warn-stack" in noise:
        warnings.simplefilter("always")
        warnings.showwarning = stack_showwarning
    if "faulthandler" in noise:
        faulthandler.dump_traceback_later(2.5, repeat=True)

    os.makedirs(args.run_dir, exist_ok=True)
    data_dir = os.path.join(args.run_dir, "data")
    if rank == 0 and not os.path.exists(os.path.join(data_dir, f"sample_{args.n_samples - 1:05d}.json")):
        make_data(data_dir, args.n_samples, args.fault, args.fault_rank, world, noise, args.batch, args.fault_step)
    if distributed and "no-data-barrier" not in noise:
        dist.barrier()
    with open(os.path.join(data_dir, "meta.json")) as f:
        meta = json.load(f)
    assert meta["vocab"] == VOCAB
    log.info(f"world_size={world} data={data_dir} samples={args.n_samples} batch={args.batch} lr={args.lr} steps={args.steps}")

    ds = JsonSeqDataset(data_dir, args.n_samples, noise, log)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if distributed else None
    dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=False,
                    num_workers=args.num_workers, drop_last=True)

    model = TinyLM(args.hidden, extra_head=(args.fault == "unused-param"),
                   lambda_act=(args.fault == "pickle-lambda"))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps + 5)
    start_step = 0

    if args.resume:
        log.info(f"resuming from {args.resume}")
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start_step = ck["step"]
        log.info(f"resumed at step {start_step}")

    if "compile-fallback" in noise:
        import torch._dynamo as _dynamo
        _dynamo.config.suppress_errors = True
        model = torch.compile(model)
        log.info("model wrapped with torch.compile (suppress_errors=True, falls back to eager on failure)")

    ddp = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    raw = model

    scaler = None
    if "amp-deprec" in noise:
        scaler = torch.cuda.amp.GradScaler()  # copied from the GPU recipe; disabled on CPU

    writer = MetricsWriter(os.path.join(args.run_dir, f"metrics_rank{rank}.jsonl"))
    if "exit-ignored" in noise:
        _KEEP.append(writer)

    db = None
    if args.fault == "sqlite-locked" or "sqlite" in noise:
        db = sqlite3.connect(os.path.join(args.run_dir, "metrics.db"), timeout=2.0, isolation_level=None)
        db.execute("CREATE TABLE IF NOT EXISTS m (rank INT, step INT, loss REAL)")

    if "slow-stackdump" in noise:
        last_beat = [time.time()]

        def watchdog():
            main_id = threading.main_thread().ident
            dumped = False
            while True:
                time.sleep(0.2)
                if time.time() - last_beat[0] > 1.5 and not dumped:
                    dumped = True
                    frames = sys._current_frames()
                    sys.stderr.write(f"[rank{rank}] step watchdog: no progress for "
                                     f"{time.time() - last_beat[0]:.1f}s, dumping stacks (py-spy style)\n")
                    for tid, fr in frames.items():
                        name = "MainThread" if tid == main_id else "watchdog"
                        sys.stderr.write(f"Thread {tid} (active): \"{name}\"\n")
                        for fs in reversed(traceback.extract_stack(fr)):
                            sys.stderr.write(f"    {fs.name} ({fs.filename}:{fs.lineno})\n")
                    sys.stderr.flush()
                elif time.time() - last_beat[0] <= 1.5:
                    dumped = False

        threading.Thread(target=watchdog, daemon=True).start()

    best, bad_evals = float("inf"), 0
    ema = None
    step = start_step
    it = iter(dl)
    pbar = None
    if args.log_style == "tqdm":
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, initial=start_step, desc=f"rank{rank} train", disable=(rank != 0),
                    dynamic_ncols=False, ncols=100, mininterval=0.5)
    stop_reason = "max_steps"
    try:
        while step < args.steps:
            try:
                x, y = next(it)
            except StopIteration:
                if sampler is not None:
                    sampler.set_epoch(step)
                it = iter(dl)
                x, y = next(it)
            step += 1
            if "slow-stackdump" in noise:
                last_beat[0] = time.time()
            if "spike" in noise and step == args.fault_step - 5 and rank == 0:
                # a batch from the mis-shuffled shard: targets not aligned with inputs
                y = torch.randint(0, VOCAB, y.shape)
            if args.fault == "nan-loss" and step >= args.fault_step and rank == args.fault_rank:
                x = x.clone()
            logits = ddp(x)
            if args.fault == "nan-loss" and step >= args.fault_step:
                # label-smoothed CE written by hand (fp "optimisation": log of softmax probs)
                probs = torch.softmax(logits * 40.0, dim=-1)
                logp = torch.log(probs)
                loss = -(0.9 * logp.gather(-1, y.unsqueeze(-1)).squeeze(-1) + 0.1 * logp.mean(-1)).mean()
            else:
                loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(raw.parameters(), 1.0)
            if "sched-order" in noise and step == start_step + 1:
                sched.step()
                opt.step()
            else:
                opt.step()
                sched.step()
            if "amp-deprec" in noise:
                with torch.cuda.amp.autocast():
                    pass
            if "warn-stack" in noise and step % 5 == 0:
                warnings.warn(f"grad norm {gn:.2f} was clipped to 1.0; consider lowering the learning rate",
                              UserWarning)
            if args.step_sleep:
                time.sleep(args.step_sleep)
            lval = loss.item()
            ema = lval if ema is None else (0.8 * ema + 0.2 * min(lval, 2 * ema))
            writer.write({"step": step, "loss": lval})
            if db is not None:
                if args.fault == "sqlite-locked" and rank == args.fault_rank and step >= args.fault_step:
                    # batch inserts on this rank: one write transaction, committed every 10 steps
                    if not db.in_transaction:
                        db.execute("BEGIN IMMEDIATE")
                    db.execute("INSERT INTO m VALUES (?,?,?)", (rank, step, lval))
                    if (step - args.fault_step) % 10 == 9:
                        db.execute("COMMIT")
                else:
                    db.execute("INSERT INTO m VALUES (?,?,?)", (rank, step, lval))
            if pbar is not None:
                pbar.update(1)
                pbar.set_postfix(loss=f"{lval:.4f}", gnorm=f"{gn:.2f}")
            elif step % 2 == 0 or step == 1 or (ema is not None and lval > 1.4 * ema):
                log.info(f"step {step}/{args.steps} loss={lval:.4f} grad_norm={gn:.3f} lr={sched.get_last_lr()[0]:.2e}")
            if "spike" in noise and ema is not None and lval > 1.4 * ema and step > 5:
                log.warning(f"loss spike detected at step {step}: {lval:.3f} (grad_norm {gn:.1f} before clipping); continuing")

            if "nonfatal-error" in noise and rank == args.fault_rank and step in (args.fault_step, args.fault_step + 10):
                try:
                    urllib.request.urlopen(urllib.request.Request(args.tracker_url, data=b"{}"), timeout=2)
                except OSError:
                    log.error(f"failed to push metrics for step {step} to tracker {args.tracker_url}; "
                              f"will retry at next log interval", exc_info=True)

            if step % args.eval_every == 0:
                ev = evaluate(raw, ds, rank, world, args, noise, log, distributed, step)
                if ev is not None:
                    if ev < best - 1e-3:
                        best, bad_evals = ev, 0
                        if args.reload_best and rank == 0:
                            os.makedirs(os.path.join(args.run_dir, "ckpt"), exist_ok=True)
                            torch.save({"model": model.state_dict(), "step": step, "eval_loss": ev},
                                       os.path.join(args.run_dir, "ckpt", "best.pt"))
                            log.info(f"new best eval loss {ev:.4f}; saved ckpt/best.pt")
                    else:
                        bad_evals += 1
                    log.info(f"eval step {step}: loss={ev:.4f} best={best:.4f} bad_evals={bad_evals}")
                    if "early-stop" in noise and bad_evals >= args.patience:
                        log.info(f"early stopping: eval loss has not improved for {bad_evals} evaluations")
                        stop_reason = "early_stop"
                        break

            if step % args.ckpt_every == 0:
                save_checkpoint(raw, opt, step, args, rank, log, noise, distributed)
    except KeyboardInterrupt:
        log.warning(f"KeyboardInterrupt at step {step}: saving final checkpoint and exiting cleanly")
        stop_reason = "interrupted"
        save_checkpoint(raw, opt, step, args, rank, log, noise, distributed=False, final=True)
    if pbar is not None:
        pbar.close()
    if stop_reason != "interrupted":
        save_checkpoint(raw, opt, step, args, rank, log, noise, distributed, final=True)
    log.info(f"training finished: reason={stop_reason} step={step} best_eval={best:.4f}")
    if args.reload_best and rank == 0:
        log.info("reloading best checkpoint for final test evaluation")
        final_model = TinyLM(args.hidden)
        ck = torch.load(os.path.join(args.run_dir, "ckpt", "best.pt"), map_location="cpu")
        final_model.load_state_dict(ck["model"])
        test_loss = evaluate(final_model, ds, 0, 1, args, set(), log, False, step)
        log.info(f"test loss of best checkpoint (step {ck['step']}): {test_loss:.4f}")
    if "exit-ignored" not in noise:
        writer.close()
    else:
        writer.close()  # closed here; __del__ runs again at interpreter shutdown
    if distributed:
        dist.destroy_process_group()


def evaluate(model, ds, rank, world, args, noise, log, distributed, step):
    model.eval()
    n_eval = 50
    if args.fault == "uneven-eval":
        idx = list(range(rank, n_eval, world))  # manual shard, no padding
    else:
        idx = list(range(rank, (n_eval // world) * world, world))
    losses = []
    with torch.no_grad():
        for i in idx:
            x, y = ds[i]
            logits = model(x.unsqueeze(0))
            losses.append(F.cross_entropy(logits[0], y, reduction="mean"))
    loss_t = torch.stack(losses)
    if args.fault == "oom-eval" and rank == args.fault_rank and step >= args.fault_step:
        # retrieval-style diagnostics: similarity of every eval embedding against the full vocab table
        emb = model.emb.weight.detach()
        reps = emb.repeat_interleave(600, 0)  # "augmented" table
        sims = reps @ reps.T
        log.info(f"sim matrix {tuple(sims.shape)}")
    model.train()
    if distributed:
        gathered = [torch.zeros_like(loss_t) for _ in range(world)]
        dist.all_gather(gathered, loss_t)
        allv = torch.cat(gathered)
    else:
        allv = loss_t
    ev = allv.mean().item()
    if "eval-error" in noise:
        try:
            ppl_hist = [math.exp(v * 300) for v in allv.tolist()]  # ppl on summed (not mean) token loss
            log.info(f"eval ppl (max) {max(ppl_hist):.3f}")
        except OverflowError:
            log.error(f"eval step {step}: perplexity computation failed; reporting loss only", exc_info=True)
    return ev


def save_checkpoint(model, opt, step, args, rank, log, noise, distributed, final=False):
    ck_dir = os.path.join(args.run_dir, "ckpt")
    os.makedirs(ck_dir, exist_ok=True)
    if args.fault == "stuck-lock" and rank == args.fault_rank and step >= args.fault_step and not final:
        lock = os.path.join(ck_dir, ".upload.lock")
        log.info(f"acquiring upload lock {lock}")
        while os.path.exists(lock):  # left behind by a previous job that was killed mid-upload
            time.sleep(0.5)
    if distributed and args.fault == "stuck-lock":
        dist.monitored_barrier(timeout=timedelta(seconds=12))
    if rank != 0:
        return
    if "slow-ckpt" in noise and not final:
        log.info("waiting for previous async checkpoint upload to finish")
        time.sleep(2.2)
    name = "final.pt" if final else f"step_{step:05d}.pt"
    path = os.path.join(ck_dir, name)
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step}
    if args.fault in ("weights-only",):
        state["args"] = args  # keep the run config next to the weights
    if args.fault == "pickle-lambda" and final:
        torch.save(model, os.path.join(ck_dir, "final_model.pt"))  # full module for the serving team
    torch.save(state, path)
    log.info(f"saved checkpoint {path} ({os.path.getsize(path) / 1e3:.1f} kB)")
    if args.fault == "export-fsize" and final:
        import numpy as np
        emb = model.emb.weight.detach().numpy()
        big = np.repeat(emb, 200, axis=0)  # per-position embedding export for the projector (TSV)
        np.savetxt(os.path.join(ck_dir, "embeddings_projector.tsv"), big, delimiter="\t", fmt="%.8f")
        log.info("exported embeddings")


def main():
    args = get_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args, args.spawn), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ.get("LOCAL_RANK", 0)), args)


if __name__ == "__main__":
    main()
