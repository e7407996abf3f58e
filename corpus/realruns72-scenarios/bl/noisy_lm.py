"""Tiny token LM trained with DDP/gloo on CPU; prints lots of per-step noise.

--fault selects a real bug / misconfiguration that triggers on --fault-rank at --fault-step.
"""
import argparse, os, sys, time, json, math, signal, threading, warnings, logging, resource
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=600)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=520)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--seq", type=int, default=16)
p.add_argument("--vocab", type=int, default=64)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", type=int, default=1)
p.add_argument("--eval-every", type=int, default=250)
p.add_argument("--out", default="/work/rr72/bl/run_out")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--run-name", default="tinylm")
args = p.parse_args()

log = None


def say(msg, rank):
    if log is not None:
        log.info(msg)
    else:
        print(msg, flush=True)


class TokenLines(Dataset):
    """Synthetic 'tokenized corpus': each line is seq+1 ids from a small vocab file."""

    def __init__(self, n, seq, vocab, bad_index=None, bad_kind=None):
        self.n, self.seq, self.vocab = n, seq, vocab
        self.bad_index, self.bad_kind = bad_index, bad_kind
        # "tokenizer" vocab: words w0..w{V-1}; unknown words get the id len(vocab) (bug: model has no row for it)
        self.word2id = {f"w{i}": i for i in range(vocab)}

    def __len__(self):
        return self.n

    def _line(self, idx):
        g = torch.Generator().manual_seed(idx)
        ids = torch.randint(0, self.vocab, (self.seq + 1,), generator=g)
        words = [f"w{i}" for i in ids.tolist()]
        if idx == self.bad_index and self.bad_kind == "unk":
            words[5] = "w_rare_unicode_token"
        if idx == self.bad_index and self.bad_kind == "long":
            words.append("w3")  # a line that was not truncated to seq+1
        if idx == self.bad_index and self.bad_kind == "empty":
            return ""
        return " ".join(words)

    def __getitem__(self, idx):
        line = self._line(idx)
        words = line.split(" ")
        ids = [self.word2id.get(w, len(self.word2id)) for w in words]
        # record header: first field must be present
        first = words[0]
        _ = int(first[1:])  # parse id of the first word (fails on an empty record)
        t = torch.tensor(ids, dtype=torch.long)
        return t[:-1], t[1:]


class TinyLM(nn.Module):
    def __init__(self, vocab, d=32, aux=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.l1 = nn.Linear(d, d)
        self.out = nn.Linear(d, vocab)
        self.aux = nn.Linear(d, 1) if aux else None

    def forward(self, x, use_aux=True):
        h = torch.tanh(self.l1(self.emb(x)))
        logits = self.out(h)
        if self.aux is not None and use_aux:
            return logits, self.aux(h).mean()
        return logits, None


def main_worker(local_rank=None, nspawn=0):
    global log
    if nspawn:
        os.environ["RANK"] = str(local_rank)
        os.environ["LOCAL_RANK"] = str(local_rank)
        os.environ["WORLD_SIZE"] = str(nspawn)
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train")
    if args.noise:
        warnings.simplefilter("always")
    torch.manual_seed(0)
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    fr, fs, fault = args.fault_rank, args.fault_step, args.fault
    mine = fault != "none" and (rank == fr or not distributed)

    if fault == "cpu-oom" and mine:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024 ** 3, hard))  # 3 GiB per worker
        say(f"[rank{rank}] memory cap for this worker set to 3 GiB (RLIMIT_AS)", rank)
    if fault == "fsize" and mine:
        resource.setrlimit(resource.RLIMIT_FSIZE, (250 * 1024, 250 * 1024))
    if fault == "nofile" and mine:
        nfd = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (nfd + fs, nfd + fs))

    bs, seq, V = args.bs, args.seq, args.vocab
    n = args.steps * bs * world + 64
    bad_index = None
    kind = {"embed-oob": "unk", "collate": "long", "worker-error": "empty"}.get(fault)
    if kind:
        bad_index = (fs * bs) * world + (fr if distributed else 0)
    ds = TokenLines(n, seq, V, bad_index, kind)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if distributed else None
    dl = DataLoader(ds, batch_size=bs, sampler=sampler, shuffle=False, num_workers=args.workers,
                    persistent_workers=False)
    model = TinyLM(V, aux=(fault == "unused"))
    if fault == "model-mismatch" and mine:
        model = TinyLM(V, d=48)
    if distributed:
        ddp = nn.parallel.DistributedDataParallel(model)
    else:
        ddp = model
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    os.makedirs(args.out, exist_ok=True)
    if args.noise:
        sched.step()  # (old habit) stepping scheduler before the first optimizer step -> real torch warning
    say(f"[rank{rank}] world={world} params={sum(p.numel() for p in model.parameters())} "
        f"batches/epoch={len(dl)} workers={args.workers}", rank)
    it = iter(dl)
    bar = None
    if args.tqdm:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc=f"rank{rank} train", position=rank if distributed else 0,
                   mininterval=0.5)
    leaked = []
    t0 = time.time()
    ema = None
    counts = torch.zeros(8)
    lock = threading.Lock()
    anomaly = torch.autograd.detect_anomaly(check_nan=True) if fault == "anomaly" else None
    if anomaly is not None:
        anomaly.__enter__()
    for step in range(args.steps):
        x, y = next(it)
        if fault == "kill-worker" and mine and step == fs:
            # an "external" OOM-killer style kill of one of our own loader workers
            for w in it._workers:
                os.kill(w.pid, signal.SIGKILL)
                break
        if fault == "sigkill" and mine and step == fs:
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "nofile" and mine:
            # per-step "hard-example" lookup that leaks a file handle per step
            fh = open(os.path.join(args.out, "vocab_stats.json"), "a+")
            leaked.append(fh)
        use_aux = True
        if fault == "unused" and mine and step >= fs:
            use_aux = False  # aux loss disabled by curriculum on this rank only
        logits, aux = ddp(x, use_aux=use_aux) if fault == "unused" else ddp(x)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        if aux is not None:
            loss = loss + 0.01 * aux
        if fault == "anomaly":
            # variance-normalised auxiliary term; std of a single-valued tensor is nan
            z = logits[:, :, 0]
            if mine and step == fs:
                z = z[:1, :1]
            loss = loss + 1e-4 * torch.sqrt(z.var() + 0.0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()
        counts += torch.bincount(y.reshape(-1) % 8, minlength=8)[:8].float()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        if args.sleep:
            time.sleep(args.sleep)
        if args.noise and step % 100 == 0 and step > 0:
            warnings.warn(f"Grad norm {gn:.3f} clipped to 1.0 at step {step}; consider lowering lr", UserWarning)
        if args.noise >= 2 and step % 40 == 7:
            say(f"[rank{rank}] WARNING: dataloader slow: batch fetch took {0.21 + (step % 13) / 100:.2f}s (>0.2s)", rank)
        msg = (f"step {step:4d} | rank {rank} | loss {loss.item():.4f} | ema {ema:.4f} | "
               f"lr {sched.get_last_lr()[0]:.2e} | gnorm {gn:.3f} | {((step + 1) * bs * seq) / (time.time() - t0):.0f} tok/s")
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if step % 25 == 0:
                bar.write(msg)
        else:
            say(msg, rank)
        if fault == "collective" and step == fs and distributed:
            # per-rank label histogram reduction; this rank counts an extra "ignore" bucket
            c = counts if rank != fr else torch.cat([counts, torch.zeros(1)])
            dist.all_reduce(c)
        if fault == "monitored" and step == fs and distributed:
            if rank == fr:
                with lock:
                    # checkpoint-metadata helper takes the same (non-reentrant) lock again -> deadlock
                    lock.acquire()
            dist.monitored_barrier(timeout=timedelta(seconds=20))
        if fault == "hang" and step == fs and rank == fr:
            with lock:
                lock.acquire()
        if fault == "keyerror" and mine and step == fs:
            metrics = {"loss": ema, "lr": sched.get_last_lr()[0]}
            say(f"[rank{rank}] eval metrics: val_ppl={metrics['val_ppl']:.2f}", rank)
        if fault == "fnf" and mine and step == fs:
            with open(os.path.join(args.out, "data", "valid.tok")) as f:
                _ = f.read()
        if fault == "fsize" and mine:
            with open(os.path.join(args.out, f"metrics_rank{rank}.jsonl"), "a") as f:
                f.write(json.dumps({"step": step, "loss": loss.item(), "hist": counts.tolist(),
                                    "pad": "x" * 400}) + "\n")
        if fault == "fname" and mine and step == fs:
            cfg = {"lr": 3e-3, "bs": bs, "seq": seq, "vocab": V, "opt": "adamw", "sched": "cosine",
                   "notes": "ablation-" + "-".join(f"layer{i}_d32_tanh_dropout0.0" for i in range(12))}
            name = "ckpt_" + "_".join(f"{k}={v}" for k, v in cfg.items()) + f"_step{step}.pt"
            torch.save(model.state_dict(), os.path.join(args.out, name))
        if fault == "xdev" and mine and step == fs:
            # "atomic" save: write to a fast tmp dir, then rename into place
            tmp = os.path.join("/dev/shm", f"ckpt_step{step}.pt.tmp")
            torch.save({"model": model.state_dict(), "step": step}, tmp)
            os.rename(tmp, os.path.join(args.out, f"ckpt_step{step}.pt"))
        if fault == "diskfull" and mine and step == fs:
            path = os.path.join(args.out, f"ckpt_step{step}.pt")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
        if fault in ("ckpt-corrupt", "weights-only", "sd-mismatch", "lfs") and mine and step == fs:
            path = os.path.join(args.out, "best.pt")
            say(f"[rank{rank}] reloading best checkpoint {path} for eval", rank)
            sd = torch.load(path, map_location="cpu")
            evm = TinyLM(V, d=32 if fault != "sd-mismatch" else 32)
            evm.load_state_dict(sd["model"] if "model" in sd else sd)
        if fault == "opt-resume" and mine and step == fs:
            # stage 2: unfreeze aux head -> new optimizer, then restore stage-1 state
            sd = opt.state_dict()
            newopt = torch.optim.AdamW([{"params": list(ddp.parameters())[:2]},
                                        {"params": list(ddp.parameters())[2:]}], lr=1e-3)
            newopt.load_state_dict(sd)
        if fault == "cpu-oom" and mine and step == fs:
            say(f"[rank{rank}] building eval logit cache", rank)
            cache = torch.empty(len(ds), seq, V, V, dtype=torch.float64)  # bug: one vocab dim too many
            cache.zero_()
        if fault == "cputime" and mine and step == fs - 1:
            used = resource.getrusage(resource.RUSAGE_SELF)
            lim = int(used.ru_utime + used.ru_stime) + 3
            resource.setrlimit(resource.RLIMIT_CPU, (lim, lim + 30))
        if fault == "cputime" and mine and step >= fs:
            # "expensive eval" spin on this rank
            a = torch.randn(300, 300)
            for _ in range(200):
                a = torch.tanh(a @ a)
    if bar is not None:
        bar.close()
    if distributed:
        dist.barrier()
    say(f"[rank{rank}] training finished: {args.steps} steps, final ema loss {ema:.4f}, "
        f"{time.time() - t0:.1f}s", rank)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "32777")
        mp.spawn(main_worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main_worker()
