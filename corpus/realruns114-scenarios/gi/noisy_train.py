"""Noisy DDP training of a tiny MLP/embedding LM on synthetic data (gloo, CPU).
Launch with torchrun, python -m torch.distributed.run, --spawn N (mp.spawn) or plain python.
--fault selects the bug, --frank the rank, --fstep the step where it shows up.
"""
import argparse, ctypes, datetime, json, logging, math, os, sys, threading, time, warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

C = {"g": "\033[32m", "y": "\033[33m", "b": "\033[34m", "c": "\033[36m", "m": "\033[35m", "r": "\033[31m", "0": "\033[0m", "B": "\033[1m"}


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--frank", type=int, default=1)
    p.add_argument("--fstep", type=int, default=30)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=44711)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--out", default="/tmp/gi_out")
    p.add_argument("--resume", default="")
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--log-style", default="logging")  # logging | print | loguru
    return p.parse_args()


class TokDS(Dataset):
    def __init__(self, n, vocab, seqlen, seed, fault, frank, rank, shard_dir=None):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, vocab, (n, seqlen), generator=g)
        self.vocab, self.fault, self.rank, self.frank = vocab, fault, rank, frank
        self.shards = []
        if shard_dir:
            # keep every shard open for fast random access
            for fn in sorted(os.listdir(shard_dir)):
                self.shards.append(open(os.path.join(shard_dir, fn), "rb"))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        if self.fault == "collate" and self.rank == self.frank and i % 97 == 13:
            x = x[: len(x) - 3]  # samples from the "short" shard are not padded
        if self.fault == "dlworker" and self.rank == self.frank and i % 89 == 41:
            meta = {"text": "..."}
            x = x + meta["n_tokens"]
        return x


class TinyLM(nn.Module):
    def __init__(self, vocab, dim=64, layers=2, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)) for _ in range(layers)])
        self.head = nn.Linear(dim, vocab)
        self.aux_head = nn.Linear(dim, 8) if extra_head else None

    def forward(self, x, use_aux=False):
        h = self.emb(x)
        for b in self.blocks:
            h = h + b(h)
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            out = out, self.aux_head(h.mean(1))
        return out


def setup_logging(rank, style):
    fmt = f"%(asctime)s {C['c']}%(levelname)s{C['0']} [%(name)s] %(message)s"
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout, force=True)
    return logging.getLogger("trainer")


def main_worker(rank, world, args):
    if args.spawn or world == 1:
        torch.set_num_threads(1)
    if args.spawn:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    warnings.simplefilter("always")
    log = setup_logging(rank, args.log_style)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=25))
    torch.manual_seed(0)
    if rank == 0:
        cfg = {"model": {"vocab": args.vocab, "dim": 64, "layers": args.layers, "dropout": 0.0, "tie_embeddings": False},
               "optim": {"name": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "weight_decay": 0.1, "warmup": 10},
               "data": {"seqlen": 32, "batch": 16, "workers": args.workers, "shuffle": True},
               "runtime": {"world_size": world, "backend": "gloo", "steps": args.steps, "save_every": args.save_every, "out": args.out}}
        log.info("Resolved config:")
        for sect, kv in cfg.items():
            for k, v in kv.items():
                print(f"  {C['b']}{sect}.{k:<18}{C['0']} = {v}")
        for i in range(120):
            print(f"  {C['b']}env.{'flag_%03d' % i:<18}{C['0']} = {['auto', True, False, 0.1 * i, None][i % 5]}")
        sys.stdout.flush()
    model = TinyLM(args.vocab, layers=args.layers, extra_head=args.fault == "unused")
    if args.fault == "statedict":
        pass
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    sched = None
    if args.fault == "sched":
        # total_steps computed from the per-epoch length of a single shard
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.fstep)
    if args.resume:
        log.info(f"Resuming from {args.resume}")
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
        opt.load_state_dict(sd["optim"])
        log.info("resumed at step %d", sd["step"])
    if world > 1:
        ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    else:
        ddp = model
    shard_dir = None
    if args.fault == "nofile":
        shard_dir = os.path.join(args.out, "shards")
    ds = TokDS(4000, args.vocab, 32, seed=rank, fault=args.fault, frank=args.frank, rank=rank, shard_dir=shard_dir)
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers, drop_last=True)
    it = iter(dl)
    bar = tqdm(total=args.steps, desc=f"train", disable=rank != 0, dynamic_ncols=False, ncols=100, mininterval=0)
    t0 = time.time()
    ema = None
    for step in range(1, args.steps + 1):
        try:
            x = next(it)
        except StopIteration:
            it = iter(dl)
            x = next(it)
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.", FutureWarning)
        if args.fault == "embed" and rank == args.frank and step == args.fstep:
            # new special tokens were added to the tokenizer but the embedding was not resized
            x = x.clone(); x[:, 5] = args.vocab + 2
        if args.fault == "hang" and rank == args.frank and step == args.fstep:
            log.info("waiting for lock on shared cache dir %s/.lock", args.out)
            while os.path.exists("/proc/1"):
                time.sleep(1)
        if args.fault == "segv" and rank == args.frank and step == args.fstep:
            buf = 0  # pointer returned by the native shard reader (NULL on short read)
            ctypes.string_at(buf)  # stale pointer from a C extension helper
        if args.fault == "sigkill" and rank == args.frank and step == args.fstep:
            with open(os.path.join(args.out, f"pid_rank{rank}"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(30)
        with torch.autocast("cpu", enabled=False):
            out = ddp(x[:, :-1], use_aux=(step != args.fstep)) if args.fault == "unused" else ddp(x[:, :-1])
        if isinstance(out, tuple):
            logits, aux = out
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), x[:, 1:].reshape(-1)) + aux.pow(2).mean()
        else:
            logits = out
            tgt = x[:, 1:]
            if args.fault == "shape" and rank == args.frank and step == args.fstep:
                tgt = x[:, 2:]  # off-by-one shift
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), tgt.reshape(-1))
        if args.fault == "nan" and rank == args.frank and step >= args.fstep:
            loss = loss * torch.log(torch.tensor(0.0)).neg() if step >= args.fstep else loss
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print("Loss is {}, stopping training".format(loss_value), flush=True)
            sys.exit(1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        ema = loss_value if ema is None else 0.9 * ema + 0.1 * loss_value
        metrics = {"loss": torch.tensor([loss_value]), "tok_s": torch.tensor([16 * 31 / max(1e-6, time.time() - t0)])}
        if args.fault == "collective" and rank == args.frank and step >= args.fstep:
            metrics["loss"] = torch.tensor([loss_value, ema])  # logs loss and ema together
        if world > 1:
            for k in metrics:
                dist.all_reduce(metrics[k])
                metrics[k] /= world
        t0 = time.time()
        lr = 3e-3 * min(1.0, step / 10)
        print(f"{C['g']}[step {step:>4}/{args.steps}]{C['0']} rank={rank} loss={loss_value:.4f} ema={ema:.4f} lr={lr:.2e} gnorm={sum(p.grad.norm() for p in model.parameters() if p.grad is not None):.3f} tok/s={metrics['tok_s'].item():.1f}", flush=True)
        if rank == 0:
            bar.set_postfix(loss=f"{metrics['loss'][0].item():.3f}")
            bar.update(1)
            if args.fault == "oom" and step == args.fstep:
                log.info("collecting full-vocab eval logits buffer for calibration")
                eval_logits = torch.zeros(200000, 32, args.vocab * 4)
            if step % 10 == 0:
                bar.write(f"{C['B']}{C['m']}+--------+----------+----------+---------+{C['0']}")
                bar.write(f"{C['B']}{C['m']}| step   | val_loss | val_ppl  | acc@1   |{C['0']}")
                vl = ema + 0.05
                res = {"val_loss": vl, "val_ppl": math.exp(vl), "acc@1": 1 / args.vocab * (1 + step / 10)}
                if args.fault == "keyerror" and step == args.fstep:
                    res = {"loss": vl, "ppl": math.exp(vl), "acc@1": res["acc@1"]}  # evaluator renamed its keys
                bar.write(f"| {step:<6} | {res['val_loss']:8.4f} | {res['val_ppl']:8.2f} | {res['acc@1']:7.4f} |")
                bar.write(f"{C['B']}{C['m']}+--------+----------+----------+---------+{C['0']}")
        if step % args.save_every == 0 and rank == 0:
            os.makedirs(os.path.join(args.out, "ckpt"), exist_ok=True)
            name = f"step{step:05d}.pt"
            if args.fault in ("longname", "longname-noout") and step == args.fstep:
                tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items()) if k != "out" or args.fault == "longname")
                name = f"step{step:05d}_{tag * 3}.pt"
            path = os.path.join(args.out, "ckpt", name)
            log.info("saving checkpoint to %s", path)
            state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step,
                     "pad": torch.zeros(args.save_pad_mb * 262144) if hasattr(args, "save_pad_mb") else None}
            if args.fault == "fileobj-save":
                with open(path, "wb") as fh:  # stream through a python file handle (fsspec-style)
                    torch.save(state, fh)
            else:
                torch.save(state, path)
            log.info("checkpoint saved (%.1f MB)", os.path.getsize(path) / 2**20)
    bar.close()
    if world > 1:
        dist.barrier()
    log.info("training finished in %d steps, final ema loss %.4f", args.steps, ema)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    args = parse()
    if os.environ.get("SAVE_PAD_MB"):
        args.save_pad_mb = int(os.environ["SAVE_PAD_MB"])
    if args.spawn:
        torch.multiprocessing.spawn(main_worker, args=(args.spawn, args), nprocs=args.spawn)
    else:
        rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
        main_worker(rank, world, args)
