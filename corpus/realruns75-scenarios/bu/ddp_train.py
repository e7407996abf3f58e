"""Small DDP regression / LM trainer on per-rank data shards (gloo, CPU).

Faults are realistic bugs / misconfigurations selected by --fault; they only
trigger on --fault-rank (global rank) at --fault-step.

  prepare:  python ddp_train.py --prepare DIR --world N [--bad-dim-rank R] [--nan-rank R]
            [--neg-rank R] [--skip-shard R] [--vocab-rank R] [--big-rank R]
"""
import argparse, os, sys, time, math, json, logging, warnings, signal
from datetime import timedelta

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--world", type=int, default=4)
p.add_argument("--bad-dim-rank", type=int, default=-1)
p.add_argument("--nan-rank", type=int, default=-1)
p.add_argument("--neg-rank", type=int, default=-1)
p.add_argument("--skip-shard", type=int, default=-1)
p.add_argument("--vocab-rank", type=int, default=-1)
p.add_argument("--big-rank", type=int, default=-1)
p.add_argument("--data", default="/work/rr75/bu/run/data")
p.add_argument("--model", default="mlp", choices=["mlp", "lm"])
p.add_argument("--steps", type=int, default=12)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--hidden", type=int, default=int(os.environ.get("MODEL_HIDDEN", "64")))
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--noise", action="store_true", help="emit the usual warnings")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default=None)
p.add_argument("--anomaly", action="store_true")
p.add_argument("--sqrt-features", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=35500)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--run-name", default="run")
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--step-sleep", type=float, default=0.0, help="pace steps (simulates slow input pipeline)")
p.add_argument("--pid-dir", default=None)
p.add_argument("--metrics", action="store_true", help="rank 0 appends metrics as jsonl")
p.add_argument("--jsonl", action="store_true", help="read samples lazily from shard-*.jsonl")
p.add_argument("--config", default=None, help="yaml file with overrides (lr, hidden, steps, bs)")
p.add_argument("--manual-allreduce", action="store_true", help="average grads by hand instead of DDP")
args = p.parse_args()

FEAT = 32
VOCAB = 100


def prepare():
    os.makedirs(args.prepare, exist_ok=True)
    for r in range(args.world):
        if r == args.skip_shard:
            continue
        g = np.random.default_rng(r)
        n = 50000 if r == args.big_rank else 512
        dim = FEAT + 1 if r == args.bad_dim_rank else FEAT
        x = g.standard_normal((n, dim)).astype(np.float32)
        if r != args.neg_rank:
            x = np.abs(x)
        if r == args.nan_rank:
            # a few raw records had missing sensor values (parsed as NaN)
            x[g.choice(n, 3, replace=False), 7] = np.nan
        y = (x[:, :FEAT].sum(1, keepdims=True) * 0.1).astype(np.float32)
        vocab = VOCAB + 28 if r == args.vocab_rank else VOCAB
        tok = g.integers(0, vocab, size=(n, 17)).astype(np.int64)
        np.savez(os.path.join(args.prepare, f"shard-{r:05d}-of-{args.world:05d}.npz"), x=x, y=y, tok=tok)
    print("wrote shards to", args.prepare)


class MLP(nn.Module):
    def __init__(self, hidden, sqrt_features=False, aux=False):
        super().__init__()
        self.sqrt_features = sqrt_features
        self.fc1 = nn.Linear(FEAT, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 1)
        self.aux = nn.Linear(hidden, 1) if aux else None

    def forward(self, x, use_aux=True):
        if self.sqrt_features:
            x = torch.sqrt(x)
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        out = self.head(h)
        if self.aux is not None and use_aux:
            out = out + 0.1 * self.aux(h)
        return out


class TinyLM(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, VOCAB)

    def forward(self, t):
        h, _ = self.rnn(self.emb(t))
        return self.out(h)


class JsonlDS(torch.utils.data.Dataset):
    """one JSON record per line: {"x": [...], "y": [...]}; indexed by byte offset, parsed lazily"""
    def __init__(self, path):
        self.path = path
        self.offsets = []
        with open(path, "rb") as f:
            off = 0
            for line in f:
                self.offsets.append(off); off += len(line)

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            rec = json.loads(f.readline())
        return torch.tensor(rec["x"], dtype=torch.float32), torch.tensor(rec["y"], dtype=torch.float32)


class ShardDS(torch.utils.data.Dataset):
    def __init__(self, path, model):
        z = np.load(path)
        self.model = model
        if model == "lm":
            self.tok = torch.from_numpy(z["tok"])
        else:
            self.x = torch.from_numpy(z["x"]); self.y = torch.from_numpy(z["y"])

    def __len__(self):
        return len(self.tok) if self.model == "lm" else len(self.x)

    def __getitem__(self, i):
        if self.model == "lm":
            return self.tok[i]
        return self.x[i], self.y[i]


def setup_logging(rank):
    if args.log_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    return logging.getLogger("trainer")


def main(rank=None, world=None):
    if rank is not None:  # mp.spawn path
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    if args.fault == "pg-twice":
        # a helper that "makes sure" distributed is set up, called again in main
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank(); world = dist.get_world_size()
    log = setup_logging(rank)
    def info(msg, all_ranks=False):
        if rank == 0 or all_ranks:
            if args.log_style == "logging":
                log.info(msg)
            else:
                print(f"[rank {rank}] {msg}" if all_ranks else msg, flush=True)

    if args.config:
        import yaml
        with open(args.config) as f:
            cfg = yaml.safe_load(f)
        for k, v in (cfg or {}).items():
            setattr(args, k.replace("-", "_"), v)
        info(f"config {args.config}: {cfg}", all_ranks=True)
    torch.manual_seed(0)
    fr, fs, fault = args.fault_rank, args.fault_step, args.fault
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f"{args.run_name}-rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    info(f"world_size={world} backend={dist.get_backend()} model={args.model} hidden={args.hidden}")


    shard = os.path.join(args.data, f"shard-{rank:05d}-of-{world:05d}.npz")
    if fault == "file-limit":
        # memory-mapped per-sample cache: one open handle per cached record
        handles = []
        cache_dir = os.path.join(args.data, "cache")
        os.makedirs(cache_dir, exist_ok=True)
        for i in range(96):
            fn = os.path.join(cache_dir, f"r{rank}-rec{i:04d}.bin")
            if not os.path.exists(fn):
                with open(fn, "wb") as f:
                    f.write(os.urandom(256))
            handles.append(open(fn, "rb"))
        info(f"cached {len(handles)} records", all_ranks=True)
    if args.jsonl:
        shard = shard.replace(".npz", ".jsonl")
        ds = JsonlDS(shard)
    else:
        ds = ShardDS(shard, args.model)
    info(f"loaded {shard} ({len(ds)} samples)", all_ranks=True)
    sampler = torch.utils.data.RandomSampler(ds, generator=torch.Generator().manual_seed(rank))
    dl = torch.utils.data.DataLoader(ds, batch_size=args.bs, sampler=sampler, num_workers=args.workers,
                                     drop_last=True, persistent_workers=args.workers > 0)

    hidden = args.hidden
    if args.model == "lm":
        model = TinyLM(hidden)
    else:
        model = MLP(hidden, sqrt_features=args.sqrt_features, aux=fault == "unused-branch")
    if args.resume:
        path = args.resume.format(rank=rank)
        info(f"resuming from {path}", all_ranks=True)
        sd = torch.load(path, map_location="cpu")
        model.load_state_dict(sd["model"])
    if args.manual_allreduce:
        for prm in model.parameters():
            dist.broadcast(prm.data, 0)
        ddp = model
    else:
        ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if args.noise:
        sched.step()  # warm-start the schedule (emits the ordering warning)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)

    mf = None
    if args.metrics and rank == 0:
        mdir = args.ckpt_dir or "."
        os.makedirs(mdir, exist_ok=True)
        mf = open(os.path.join(mdir, f"metrics-{args.run_name}.jsonl"), "a")
    it = iter(dl)
    bar = None
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100, file=sys.stderr)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        try:
            batch = next(it)
        except StopIteration:
            it = iter(dl); batch = next(it)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if args.model == "lm":
            inp, tgt = batch[:, :-1], batch[:, 1:]
            logits = ddp(inp)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1))
        else:
            x, y = batch
            if fault == "unused-branch":
                use_aux = not (rank == fr and step == fs)  # aux target missing in this batch
                pred = ddp(x, use_aux=use_aux)
            else:
                pred = ddp(x)
            loss = F.mse_loss(pred, y)

        if fault == "nan-check" or args.noise:
            lv = loss.item()
            if not math.isfinite(lv):
                if fault == "nan-check":
                    print(f"Loss is {lv}, stopping training", flush=True)
                    sys.exit(1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.manual_allreduce:
            for prm in ddp.parameters():
                if prm.grad is not None:
                    dist.all_reduce(prm.grad); prm.grad /= world
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        if args.noise and not torch.isfinite(gn):
            print(f"[rank {rank}] WARNING: non-finite grad norm ({gn.item()}) at step {step}, skipping update", flush=True)
            opt.zero_grad(set_to_none=True)
        opt.step(); sched.step()

        # metrics all-reduce
        metrics = [loss.detach(), gn.detach(), torch.tensor(float(x.shape[0] if args.model == "mlp" else inp.shape[0]))]
        if fault == "extra-metric" and rank == fr and step >= fs:
            # this rank's shard carries an extra aux label -> it logs one more metric
            metrics.append(torch.tensor(0.0))
        mt = torch.stack([m.float().reshape(()) for m in metrics])
        dist.all_reduce(mt)
        mt /= world

        if fault == "segv" and rank == fr and step == fs:
            import ctypes
            # custom fast-path metric kernel reads through a stale buffer pointer
            buf = ctypes.c_void_p(0)
            ctypes.string_at(buf.value or 8, 64)
        if fault == "slow-eval" and step == fs:
            if rank == fr:
                info(f"running full-shard eval on rank {rank}", all_ranks=True)
                # eval over the whole shard on this rank only (others skip it): pairwise distances
                with torch.no_grad():
                    emb = ds.x if args.model == "mlp" else None
                    n = 0
                    for i in range(0, 4000, 400):
                        d = torch.cdist(emb[i:i + 400], emb[:20000])
                        n += int((d < 1.0).sum())
                        time.sleep(2.0)
            dist.monitored_barrier(timeout=timedelta(seconds=10))
        if fault == "fifo-read" and rank == fr and step == fs:
            # this rank reloads its prompt list from the shared path; on this node it is a named pipe left by a tool
            with open(os.path.join(args.data, "eval_prompts.txt")) as f:
                prompts = f.read().splitlines()
        if fault == "dedup-eval" and rank == fr and step == fs:
            info("computing near-duplicate matrix for shard", all_ranks=True)
            with torch.no_grad():
                d = torch.cdist(ds.x, ds.x)  # n x n
                info(f"dups={(d < 1e-3).sum().item()}", all_ranks=True)

        if args.log_style == "tqdm" and bar is not None:
            bar.set_postfix(loss=f"{mt[0].item():.4f}", gnorm=f"{mt[1].item():.3f}")
            bar.update(1)
        else:
            info(f"step {step:4d}/{args.steps} loss {mt[0].item():.5f} grad_norm {mt[1].item():.4f} "
                 f"lr {sched.get_last_lr()[0]:.2e} {(time.time() - t0) / step:.3f}s/it")
        if mf is not None:
            mf.write(json.dumps(dict(step=step, loss=mt[0].item(), grad_norm=mt[1].item())) + "\n"); mf.flush()
        if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
            ck = dict(model=model.state_dict(), optim=opt.state_dict(), step=step)
            if fault in ("ckpt-args",):
                ck["args"] = args
            if fault == "per-rank-ckpt" or fault == "ckpt-all":
                os.makedirs(args.ckpt_dir, exist_ok=True)
                fn = os.path.join(args.ckpt_dir, f"{args.run_name}-step{step:06d}-rank{rank}.pt")
                torch.save(ck, fn)
                info(f"saved {fn}", all_ranks=True)
            elif rank == 0:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                fn = os.path.join(args.ckpt_dir, f"{args.run_name}-step{step:06d}.pt")
                if fault == "atomic-save":
                    import tempfile
                    fd, tmp = tempfile.mkstemp(suffix=".pt", dir="/dev/shm")
                    os.close(fd)
                    torch.save(ck, tmp)
                    os.rename(tmp, fn)  # atomic publish
                else:
                    torch.save(ck, fn)
                info(f"saved checkpoint {fn}")
            if fault != "slow-eval":
                dist.barrier()
    if bar is not None:
        bar.close()
    info(f"training done in {time.time() - t0:.1f}s, final loss {mt[0].item():.5f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.prepare:
        prepare(); sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
