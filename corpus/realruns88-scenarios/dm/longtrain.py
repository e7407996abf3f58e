"""Long noisy DDP training run (tiny LM + aux classifier) with selectable, realistic faults.

Launch with torchrun / python -m torch.distributed.run, or --spawn N (torch.multiprocessing.spawn),
or plain python (single process, world size 1).
"""
import argparse
import datetime
import glob
import logging
import math
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=600)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--warmup", type=int, default=50)
p.add_argument("--sched", default="cosine", choices=["cosine", "linear-warmup-nocap", "onecycle"])
p.add_argument("--epochs-for-sched", type=int, default=1)
p.add_argument("--fmt", default="kv", choices=["kv", "hf", "megatron", "tqdm", "log"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=-1)
p.add_argument("--fault-attempt", type=int, default=-1)
p.add_argument("--data-dir", default="")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--save-args-ns", action="store_true")
p.add_argument("--n-layer", type=int, default=1)
p.add_argument("--aux-until", type=int, default=10**9)
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=38300)
p.add_argument("--spikes", default="")
p.add_argument("--noisy", action="store_true")
p.add_argument("--tbptt-from", type=int, default=-1)
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--slow-sec", type=float, default=0.0)
args = p.parse_args()

attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def fault_active(name, rank):
    if args.fault != name:
        return False
    if args.fault_attempt >= 0 and attempt != args.fault_attempt:
        return False
    return args.fault_rank < 0 or rank == args.fault_rank


# ----------------------------------------------------------------------------------- data
def make_sample(rng, seq, vocab):
    # tokens from a noisy arithmetic-progression process -> learnable next-token task
    start = rng.integers(0, vocab)
    stride = rng.integers(1, 7)
    toks = (start + stride * np.arange(seq + 1)) % vocab
    noise = rng.random(seq + 1) < 0.1
    toks[noise] = rng.integers(0, vocab, noise.sum())
    window = np.cumsum(rng.normal(size=16)) + rng.normal() * 3
    label = int(stride + (start % 4)) % 10
    return toks.astype(np.int64), window.astype(np.float32), label


def normalize(w):
    # per-sample standardisation of the sensor window (no epsilon)
    return (w - w.mean()) / w.std()


class SynthLM(Dataset):
    def __init__(self, rank, n, seq, vocab):
        self.rank, self.n, self.seq, self.vocab = rank, n, seq, vocab
        self.overrides = {}

    def __len__(self):
        return self.n

    def raw(self, i):
        rng = np.random.default_rng(1000 * self.rank + i)
        return make_sample(rng, self.seq, self.vocab)

    def __getitem__(self, i):
        toks, window, label = self.raw(i)
        if i in self.overrides:
            toks, window, label = self.overrides[i](toks, window, label)
        return torch.from_numpy(toks), torch.from_numpy(normalize(window)), label


class ChunkedLM(Dataset):
    """Reads samples lazily from chunk files data_dir/rank{r}/chunk{c:04d}.npz"""

    def __init__(self, root, rank, chunk=64, leak=False):
        self.files = sorted(glob.glob(os.path.join(root, f"rank{rank}", "chunk*.npz")))
        self.root, self.rank, self.chunk, self.leak = root, rank, chunk, leak
        self.n = 64 * int(open(os.path.join(root, f"rank{rank}", "NUM_CHUNKS")).read())
        self._open = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        c = i // self.chunk
        path = os.path.join(self.root, f"rank{self.rank}", f"chunk{c:04d}.npz")
        f = open(path, "rb")
        z = np.load(f)
        toks, window, label = z["toks"][i % self.chunk], z["win"][i % self.chunk], int(z["lab"][i % self.chunk])
        if self.leak:
            self._open.append((f, z))  # keep handle "for reuse" (never closed)
        else:
            z.close(); f.close()
        return torch.from_numpy(toks), torch.from_numpy(normalize(window)), label


def prep_data(root, world, n_chunks, seq, vocab):
    for r in range(world):
        d = os.path.join(root, f"rank{r}")
        os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(r)
        for c in range(n_chunks):
            s = [make_sample(rng, seq, vocab) for _ in range(64)]
            np.savez(os.path.join(d, f"chunk{c:04d}.npz"), toks=np.stack([a for a, _, _ in s]),
                     win=np.stack([b for _, b, _ in s]), lab=np.array([c_ for _, _, c_ in s]))
        open(os.path.join(d, "NUM_CHUNKS"), "w").write(str(n_chunks))


# ----------------------------------------------------------------------------------- model
class TinyLM(nn.Module):
    def __init__(self, vocab, d=64, n_layer=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.feat = nn.Linear(16, d)
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(d, 4, 128, dropout=0.0, batch_first=True) for _ in range(n_layer)])
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.lm_head = nn.Linear(d, vocab)
        self.aux_head = nn.Linear(d, 10)

    def forward(self, toks, feats, use_aux=True, h0=None):
        h = self.embed(toks) + self.feat(feats)[:, None, :]
        for layer in self.layers:
            h = layer(h)
        h, hn = self.rnn(h, h0)
        logits = self.lm_head(h)
        aux = self.aux_head(h.mean(1)) if use_aux else None
        return logits, aux, hn


# ----------------------------------------------------------------------------------- printing
class Printer:
    def __init__(self, rank, world, total):
        self.rank, self.world, self.total = rank, world, total
        self.bar = None
        if args.fmt == "tqdm":
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=f"[rank{rank}] train", dynamic_ncols=False, ncols=120,
                            position=0, leave=True, mininterval=0.0, file=sys.stderr)
        if args.fmt == "log":
            logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                                format=f"%(asctime)s - %(levelname)s - [rank{rank}] - %(name)s - %(message)s")
        self.log = logging.getLogger("train")

    def info(self, msg):
        if args.fmt == "log":
            self.log.info(msg)
        elif self.bar is not None:
            self.bar.write(f"[rank{self.rank}] {msg}")
        else:
            print(f"[rank{self.rank}] {msg}", flush=True)

    def warn(self, msg):
        if args.fmt == "log":
            self.log.warning(msg)
        else:
            self.info("WARNING " + msg)

    def step(self, step, loss, aux, lr, gn, tps, ms, epoch, scale=1.0):
        if args.fmt == "kv":
            print(f"[rank{self.rank}] step {step:>5}/{self.total} | loss={loss:.4f} | aux_loss={aux:.4f} | "
                  f"lr={lr:.3e} | grad_norm={gn:.3f} | tok/s={tps:,.0f} | step_ms={ms:.1f}", flush=True)
        elif args.fmt == "hf":
            print({"loss": round(loss, 4), "grad_norm": round(gn, 4), "learning_rate": lr,
                   "epoch": round(epoch, 4)}, flush=True)
        elif args.fmt == "megatron":
            print(f" iteration {step:8d}/{self.total:8d} | consumed samples: {step * args.bs * self.world:10d} | "
                  f"elapsed time per iteration (ms): {ms:.1f} | learning rate: {lr:.6E} | global batch size: "
                  f"{args.bs * self.world:5d} | lm loss: {loss:.6E} | loss scale: {scale:.1f} | grad norm: "
                  f"{gn:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |", flush=True)
        elif args.fmt == "tqdm":
            self.bar.set_postfix(loss=f"{loss:.4f}", lr=f"{lr:.2e}", gn=f"{gn:.2f}")
            self.bar.update(1)
        elif args.fmt == "log":
            self.log.info(f"epoch {epoch:.2f} step {step}/{self.total} loss {loss:.4f} aux {aux:.4f} "
                          f"lr {lr:.3e} grad_norm {gn:.3f} {tps:,.0f} tok/s")


# ----------------------------------------------------------------------------------- main
def lr_at(step):
    if args.sched == "linear-warmup-nocap":
        return args.lr * (step + 1) / args.warmup  # warmup factor never capped at 1.0
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    prog = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * 0.5 * (1 + math.cos(math.pi * min(1.0, prog)))


def main(local_rank=None, world_override=None):
    if local_rank is not None:  # mp.spawn
        os.environ.update(RANK=str(local_rank), WORLD_SIZE=str(world_override), LOCAL_RANK=str(local_rank),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(0)
    torch.set_num_threads(1)
    out = Printer(rank, world, args.steps)
    out.info(f"world_size={world} attempt={attempt} pid={os.getpid()}")

    # data
    if args.data_dir:
        ds = ChunkedLM(args.data_dir, rank, leak=(args.fault == "fd-leak"))
    else:
        ds = SynthLM(rank, args.steps * args.bs - (5 if fault_active("view-bs", rank) else 0), args.seq,
                     args.vocab)
        if args.fault_step >= 0:
            i0 = args.fault_step * args.bs + 3
            if fault_active("flat-window", rank):
                ds.overrides[i0] = lambda t, w, l: (t, np.full_like(w, w[0]), l)  # sensor dropout: constant window
            if fault_active("eos-token", rank):
                def add_eos(t, w, l):
                    t = t.copy(); t[args.seq // 2] = args.vocab  # <eos> added to tokenizer but not to the embedding
                    return t, w, l
                ds.overrides[i0] = add_eos
            if fault_active("long-doc", rank):
                def long_doc(t, w, l):
                    rng = np.random.default_rng(7)
                    return np.concatenate([t, rng.integers(0, args.vocab, 7)]), w, l  # truncation skipped
                ds.overrides[i0] = long_doc
        if args.spikes:
            for s in [int(x) for x in args.spikes.split(",")]:
                for j in range(args.bs):
                    ds.overrides[s * args.bs + j] = lambda t, w, l: (
                        np.random.default_rng(int(t[0])).integers(0, args.vocab, t.shape[0]), w, l)
    dl = DataLoader(ds, batch_size=args.bs, shuffle=False, num_workers=args.workers, drop_last=False,
                    persistent_workers=args.workers > 0)

    model = TinyLM(args.vocab, n_layer=args.n_layer)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    raw = model.module if distributed else model
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = None
    if args.sched == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr,
                                                    total_steps=len(dl) * args.epochs_for_sched // 2,
                                                    pct_start=0.1)
    start = 0
    if args.resume:
        path = args.resume
        if args.resume == "auto":
            latest = os.path.join(args.ckpt_dir, "latest")
            path = os.path.join(args.ckpt_dir, open(latest).read().strip()) if os.path.exists(latest) else ""
        if path:
            out.info(f"resuming from {path}")
            ck = torch.load(path, map_location="cpu")
            raw.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            start = ck["step"]
            out.info(f"resumed at step {start}")
    if args.noisy and rank == 0:
        warnings.warn("torch.distributed: gloo backend is used for CPU training; this is slower than NCCL",
                      UserWarning)

    h = None
    t_last = time.time()
    step = start
    it = iter(dl)
    # skip already-consumed batches on resume
    for _ in range(start):
        next(it)
    while step < args.steps:
        try:
            toks, feats, labels = next(it)
        except StopIteration:
            break
        if fault_active("segv", rank) and step == args.fault_step:
            import ctypes
            ctypes.string_at(0)  # native code dereferencing NULL
        if fault_active("slow-eval", rank) and step == args.fault_step:
            out.info(f"running full validation on rank {rank} before step {step} ...")
            t0 = time.time()
            with torch.no_grad():
                vds = SynthLM(99, 20000, args.seq, args.vocab)
                tot = 0.0
                for k in range(0, 20000, 64):
                    tb = torch.stack([vds[j][0] for j in range(k, k + 64)])
                    fb = torch.stack([vds[j][1] for j in range(k, k + 64)])
                    lg, _, _ = raw(tb[:, :-1], fb)
                    tot += F.cross_entropy(lg.reshape(-1, args.vocab), tb[:, 1:].reshape(-1)).item()
            out.info(f"validation done in {time.time() - t0:.1f}s val_loss={tot / (20000 / 64):.4f}")
        if args.monitored_barrier and args.ckpt_every and step > 0 and step % args.ckpt_every == 0:
            if fault_active("slow-rank", rank) and step == args.fault_step:
                out.info("re-indexing local shard cache ...")
                time.sleep(args.slow_sec)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
        t0 = time.time()
        inp, tgt = toks[:, :-1], toks[:, 1:]
        use_aux = step < args.aux_until
        if args.fault == "view-bs":
            pass
        stateful = args.tbptt_from >= 0 and step >= args.tbptt_from
        logits, aux, hn = model(inp, feats, use_aux=use_aux, h0=h if stateful else None)
        if args.fault == "view-bs":
            logits = logits.view(args.bs * args.seq, args.vocab)  # assumes a full batch
            loss = F.cross_entropy(logits, tgt.reshape(-1))
        else:
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), tgt.reshape(-1))
        aux_loss = F.cross_entropy(aux, labels) if use_aux else torch.zeros(())
        total = loss + 0.1 * aux_loss
        opt.zero_grad(set_to_none=True)
        total.backward()
        if stateful:
            h = hn  # carry hidden state to the next chunk (truncated BPTT)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip).item()
        lr = lr_at(step) if sched is None else sched.get_last_lr()[0]
        if sched is None:
            for g in opt.param_groups:
                g["lr"] = lr
        opt.step()
        if sched is not None:
            sched.step()
        # metrics
        counts = torch.bincount(labels, minlength=10)  # per-class counts for the epoch confusion stats
        if fault_active("bincount", rank) and step == args.fault_step:
            counts = torch.bincount(labels[labels < 8], minlength=8)  # drop 'other' classes
        stats = torch.stack([loss.detach(), aux_loss.detach()])
        if distributed:
            if args.fault == "bincount" or args.fmt == "megatron":
                dist.all_reduce(counts)
            dist.all_reduce(stats)
            stats /= world
        ms = (time.time() - t0) * 1000
        tps = toks.numel() / max(1e-6, time.time() - t_last)
        t_last = time.time()
        step += 1
        out.step(step, stats[0].item(), stats[1].item(), lr, gn, tps, ms, step * args.bs / len(ds))
        if args.noisy and gn > 5 * args.clip and rank == 0:
            out.warn(f"grad norm {gn:.2f} exceeds 5x clip threshold at step {step}; clipping")
        if args.eval_every and step % args.eval_every == 0 and rank == 0:
            res = {"val_loss": stats[0].item(), "val_ppl": math.exp(min(20, stats[0].item()))}
            if fault_active("metric-key", rank) and step == args.fault_step:
                res = {"eval/loss": stats[0].item(), "eval/ppl": math.exp(min(20, stats[0].item()))}
            out.info(f"eval @ {step}: loss {res['val_loss']:.4f} ppl {res['val_ppl']:.2f}")
        if args.ckpt_every and step % args.ckpt_every == 0 and rank == 0:
            state = {"model": raw.state_dict(), "optimizer": opt.state_dict(), "step": step}
            if args.save_args_ns:
                state["args"] = args
            if fault_active("unpicklable", rank):
                state["collate_fn"] = lambda b: b
            os.makedirs(args.ckpt_dir, exist_ok=True)
            name = f"step_{step:06d}.pt"
            with open(os.path.join(args.ckpt_dir, name), "wb") as f:
                torch.save(state, f)
            open(os.path.join(args.ckpt_dir, "latest"), "w").write(name)
            out.info(f"saved checkpoint {os.path.join(args.ckpt_dir, name)}")
    out.info(f"training finished: {step} steps")
    if out.bar is not None:
        out.bar.close()
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C -> KeyboardInterrupt even when started from a script
    if os.environ.get("PREP_DATA"):
        prep_data(os.environ["PREP_DATA"], int(os.environ.get("PREP_WORLD", "4")),
                  int(os.environ.get("PREP_CHUNKS", "20")), args.seq, args.vocab)
        sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
