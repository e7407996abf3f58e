"""Small DDP regression/LM trainer over per-rank data shards (gloo, CPU).

Flags select the fault (--fault), the rank (--fault-rank) and the step (--fault-step).
"""
import argparse, datetime, json, logging, os, resource, sys, time, warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--data-dir", default="/work/rr152/km/data")
p.add_argument("--ckpt-dir", default="/work/rr152/km/ckpt")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--style", default="plain", choices=["plain", "bare", "logging", "json", "tqdm"])
p.add_argument("--batch", type=int, default=16)
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--noise", action="store_true", help="print healthy-run warnings")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--resume-dir", default=None, help="resume from <dir>/model.pt and <dir>/optim-rank<r>.pt")
p.add_argument("--opt", default="adamw", choices=["adamw", "sgd"])
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--cfg", default=None, help="JSON run config (model/optim overrides)")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
FR = args.fault_rank
mine = rank == FR or FR == -1

if args.style == "json":
    from pythonjsonlogger import jsonlogger
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(jsonlogger.JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[h])
elif args.style in ("logging", "tqdm"):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg, **kw):
    if args.style == "plain":
        print(f"[rank{rank}] {msg}", flush=True)
    elif args.style == "bare":
        print(msg, flush=True)
    elif args.style == "json":
        log.info(msg, extra=dict(rank=rank, **kw))
    else:
        log.info(msg)


class ShardDataset(Dataset):
    """Token windows read from data/shard-<rank>.npy (or .jsonl)."""

    def __init__(self, rank):
        self.rank = rank
        self.path = os.path.join(args.data_dir, f"shard-{rank:02d}.npy")
        if args.fault == "missing-shard" and rank == FR:
            self.path = os.path.join(args.data_dir, f"shard-{rank + 8 * world:02d}.npy")
        if args.fault == "leak-fds":
            self.arr = None
        else:
            self.arr = np.load(self.path, mmap_mode="r")
        self.n = 4096
        self.handles = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if args.fault == "leak-fds" and self.rank == FR:
            # re-open the shard for every sample (handle never closed)
            f = open(self.path, "rb")
            self.handles[i] = f  # keep handle for the sample index cache
            arr = np.load(f)
        elif args.fault == "leak-fds":
            arr = self.arr if self.arr is not None else np.load(self.path, mmap_mode="r")
            self.arr = arr
        else:
            arr = self.arr
        j = (i * 17) % (arr.shape[0] - 33)
        x = torch.from_numpy(np.array(arr[j:j + 33], dtype=np.int64))
        if args.fault == "slow-worker" and self.rank == FR and i >= args.fault_step * args.batch:
            time.sleep(60)  # shard sits on a stalled mount
        if args.fault == "ragged" and self.rank == FR and i % 97 == 13:
            x = x[:-1]  # last record of the shard is one token short
        return x


class TinyLM(nn.Module):
    def __init__(self, vocab, d=64, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.out = nn.Linear(d, vocab)
        self.aux = nn.Linear(d, 1) if extra_head else None

    def forward(self, x, use_aux=True):
        h = self.emb(x)
        h = h + self.mlp(h)
        y = self.out(h)
        if self.aux is not None and use_aux:
            return y, self.aux(h).mean()
        return y, None


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    if args.fault == "nofile" and mine:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
    if args.fault == "as-limit" and mine:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024 ** 3, resource.RLIM_INFINITY))

    vocab = args.vocab
    d = 64
    cfg = {}
    if args.cfg:
        with open(args.cfg) as f:
            cfg = json.load(f)
        vocab = cfg.get("vocab_size", vocab)
        d = cfg.get("d_model", d)
    if args.fault == "cache-lock" and rank == 0:
        from filelock import FileLock
        # build the token-count cache once per node, guarded by a lock next to the data
        with FileLock(os.path.join(args.data_dir, ".token_cache.lock"), timeout=15):
            counts = np.bincount(np.load(os.path.join(args.data_dir, "shard-00.npy")), minlength=vocab)
            np.save(os.path.join(args.data_dir, "token_counts.npy"), counts)
        say(f"token cache ready ({counts.sum()} tokens)")
    if args.fault == "cache-lock":
        dist.barrier()
    if args.fault == "cfg-drift" and mine:
        d = 96  # this node still has the old config.yaml (d_model: 96)
    model = TinyLM(vocab, d, extra_head=args.fault == "unused-aux")
    ddp = DDP(model, find_unused_parameters=args.noise)
    if args.opt == "sgd":
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
    if args.resume_dir:
        sd = torch.load(os.path.join(args.resume_dir, "model.pt"), map_location="cpu")
        model.load_state_dict(sd["model"])
        opt.load_state_dict(torch.load(os.path.join(args.resume_dir, f"optim-rank{rank}.pt"), map_location="cpu"))
        say(f"resumed from {args.resume_dir} at step {sd['step']}")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    if args.noise:
        sched.step()  # warm-up scheduler stepped at start (before the first optimizer.step)
        torch.set_num_threads(1)
        if rank == 0:
            torch.nn.functional.softmax(torch.zeros(2, 3))  # legacy eval helper
    lossf = nn.CrossEntropyLoss()

    ds = ShardDataset(rank)
    dl = DataLoader(ds, batch_size=args.batch, shuffle=False, num_workers=args.workers,
                    timeout=(20 if args.workers else 0), persistent_workers=False)
    say(f"world_size={world} shard={ds.path} samples={len(ds)} params={sum(p.numel() for p in model.parameters())}")
    it = iter(dl)
    if args.style == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100)
    else:
        bar = None
    t0 = time.time()
    for step in range(1, args.steps + 1):
        try:
            x = next(it)
        except StopIteration:  # new epoch
            it = iter(dl)
            x = next(it)
        inp, tgt = x[:, :-1], x[:, 1:]
        if args.fault == "bad-tokens" and mine and step == args.fault_step:
            pass
        out, aux = ddp(inp, use_aux=not (args.fault == "unused-aux" and mine and step >= args.fault_step))
        loss = lossf(out.reshape(-1, out.size(-1)), tgt.reshape(-1))
        if aux is not None:
            loss = loss + 0.01 * aux
        if args.fault == "metric-key" and mine and step == args.fault_step:
            stats = {"loss": loss.item(), "tok": inp.numel()}
            say(f"step {step} ppl {np.exp(stats['loss']):.2f} acc {stats['accuracy']:.3f}")
        if args.fault == "segv" and mine and step == args.fault_step:
            import ctypes
            ctypes.string_at(0xdead0000, 8)  # custom fused kernel wrapper reading a freed buffer
        if args.fault == "as-limit" and mine and step == args.fault_step:
            # eval pass: full-vocab logits over the whole shard at once
            big = torch.randn(4096 * 32, vocab * 160)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.fault == "nan-lr" and mine:
            pass
        opt.step()
        lv = loss.detach().clone()
        if args.fault == "shape-allreduce" and mine and step == args.fault_step:
            lv = torch.stack([loss.detach(), torch.tensor(float(inp.numel()))])
        dist.all_reduce(lv)
        if args.fault == "nonfinite" and not torch.isfinite(lv).all():
            raise FloatingPointError(f"Loss is {lv.item()} at step {step}, stopping training")
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{lv.item() / world:.3f}")
        elif step % 5 == 0 or step == 1:
            say(f"step {step}/{args.steps} loss {lv.item() / world:.4f} lr {opt.param_groups[0]['lr']:.1e} {(time.time() - t0) / step:.3f}s/it", step=step)
        if args.fault in ("stuck-eval", "stuck-hang") and step == args.fault_step:
            if mine:
                import faulthandler
                print(f"[rank{rank}] running validation on {ds.path} ...", flush=True)
                faulthandler.dump_traceback_later(25, exit=False)
                open_val = os.path.join(args.data_dir, "val.fifo")  # validation shard on a stalled mount
                with open(open_val, "rb") as f:
                    f.read()
            if args.fault == "stuck-eval":
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=15))
            else:
                dist.barrier()
        if args.fault in ("ckpt-ro", "ckpt-full") and step == args.fault_step and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step:05d}.pt")
            with open(path, "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "pad": torch.zeros(2_000_000)}, f)
            say(f"saved {path}")
        if args.fault in ("ckpt-ro", "ckpt-full") and step == args.fault_step:
            dist.barrier()
    if bar is not None:
        bar.close()
    if rank == 0 and args.fault == "none":
        os.makedirs(args.ckpt_dir, exist_ok=True)
    dist.barrier()
    say("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
