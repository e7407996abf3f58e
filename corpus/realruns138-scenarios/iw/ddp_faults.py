"""Small DDP language-model-ish training loop with selectable real faults.

--fault NAME --fault-rank R --fault-step S
"""
import argparse, os, sys, time, math, logging, warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--resume", default="")
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--logfmt", default="print")  # print | logging | rich
p.add_argument("--pbar", action="store_true")
p.add_argument("--shards", default="")
p.add_argument("--nsamples", type=int, default=256)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--timeout-s", type=int, default=20)
args = p.parse_args()

RANK = int(os.environ.get("RANK", "0")) if "RANK" in os.environ else None

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
    old = logging.getLogRecordFactory()
    def fac(*a, **k):
        r = old(*a, **k); r.rank = os.environ.get("RANK", "?"); return r
    logging.setLogRecordFactory(fac)
    log = logging.getLogger("train").info
elif args.logfmt == "rich":
    from rich.logging import RichHandler
    from rich.console import Console
    from rich.traceback import install
    con = Console(force_terminal=True, width=int(os.environ.get("COLUMNS", "100")), stderr=True)
    install(console=con, show_locals=False, width=int(os.environ.get("COLUMNS", "100")))
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=con, rich_tracebacks=True)])
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{os.environ.get('RANK','0')}] {msg}", flush=True)


class TokData(Dataset):
    def __init__(self, n=256, seqlen=16, vocab=100, bad_index=None, bad_kind=None):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, seqlen), generator=g)
        self.bad_index = bad_index
        self.bad_kind = bad_kind
        self.vocab = vocab
        self.meta = [{"len": seqlen, "src": f"shard{i%4}"} for i in range(n)]
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.bad_index is not None and i in self.bad_index:
            if self.bad_kind == "oov":
                x = x.clone(); x[5] = self.vocab + 7  # tokenizer with added tokens, model not resized
            elif self.bad_kind == "ragged":
                x = x[: 11]  # sample shorter than the rest, no padding
            elif self.bad_kind == "meta":
                m = dict(self.meta[i]); del m["len"]
                return {"input_ids": x, "length": m["len"]}
        return {"input_ids": x, "length": self.meta[i]["len"]}


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.block = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))
        self.ln = nn.LayerNorm(hidden)
        self.pos = nn.Parameter(torch.zeros(16, hidden))  # max_seq_len 16
        self.head = nn.Linear(hidden, vocab)
        self.aux = nn.Linear(hidden, 2) if extra_head else None
    def forward(self, ids, use_aux=False):
        h = self.emb(ids) + self.pos[: ids.size(1)]
        h = self.ln(h + self.block(h))
        out = self.head(h)
        if use_aux and self.aux is not None:
            return out, self.aux(h.mean(1))
        return out


def main():
    distributed = "RANK" in os.environ or args.fault == "no_env"
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout_s))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    torch.manual_seed(1234)
    f, fr, fs = args.fault, args.fault_rank, args.fault_step
    mine = (rank == fr)

    log(f"world_size={world} backend={'gloo' if distributed else 'none'} vocab={args.vocab} hidden={args.hidden} lr={args.lr:g}")

    if f == "warn_noise":
        warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)
        warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible.", UserWarning)

    vocab = args.vocab
    bad_idx, bad_kind = None, None
    if f in ("oov", "ragged", "meta") and mine:
        bad_idx, bad_kind = set(range(fs * 8, fs * 8 + 8)), f
    if f in ("oov", "ragged", "meta") and not mine:
        pass
    ds = TokData(n=args.nsamples, vocab=vocab, bad_index=bad_idx, bad_kind=bad_kind)
    if f == "empty_shards" and mine:
        import glob
        files = sorted(glob.glob(os.path.join(args.shards, "*.pt")))
        ds.x = ds.x[:0] if not files else ds.x
    if f == "fds" :
        # each rank memory-maps one file per shard and keeps them open
        import glob
        handles = []
        files = sorted(glob.glob(os.path.join(args.shards, "*.bin")))
        log(f"opening {len(files)} shard files")
        for fn in files:
            handles.append(open(fn, "rb"))
        log(f"opened {len(handles)} shards")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if distributed else None
    dl = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=args.workers, shuffle=False)

    hidden = args.hidden
    if f == "model_mismatch" and mine:
        hidden = args.hidden + 16  # stale config on this node
    model = TinyLM(vocab, hidden, extra_head=(f in ("unused",)))
    if args.resume:
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
        log(f"resumed from {args.resume} (step {sd.get('step')})")
    if distributed:
        ddp = DDP(model)
    else:
        ddp = model
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
    lossf = nn.CrossEntropyLoss()

    if f == "oom" and mine:
        import resource
        log("allocating activation buffer for long-context eval")

    it = dl
    if args.pbar and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, total=min(args.steps, len(dl)), desc="train", dynamic_ncols=False, ncols=90)

    step = 0
    t0 = time.time()
    for batch in it:
        if step >= args.steps:
            break
        ids = batch["input_ids"]
        if f == "shape" and mine and step == fs:
            ids = torch.cat([ids, batch["input_ids"].roll(1, 0)], dim=1)  # sequence packing enabled
        if f == "oom" and mine and step == fs:
            buf = torch.empty((vocab * 4096, 65536), dtype=torch.float32)  # 100k x 64k floats
        if f == "sleep" and mine and step == fs:
            log("running extra validation pass")
            time.sleep(600)
        if f == "mbarrier" and step == fs:
            if mine:
                log("rank entering long checkpoint upload")
                time.sleep(600)
            dist.monitored_barrier(timeout=timedelta(seconds=8))
        inp, tgt = ids[..., :-1], ids[..., 1:]
        if f == "unused" and step >= 0:
            out = ddp(inp, use_aux=(rank == fr and step == fs))
            logits = out[0] if isinstance(out, tuple) else out
        else:
            logits = ddp(inp)
        if f == "shape" and mine and step == fs:
            loss = lossf(logits, tgt)
        else:
            loss = lossf(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
        if f == "nan" and mine and step == fs:
            loss = loss * torch.tensor(float("inf")) * 0.0 + loss  # inf*0 from bad loss-scale
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        if f == "nan" and not torch.isfinite(loss):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step}, stopping training")
        opt.step()
        if f == "metrics" and mine and step == fs:
            stats = {"loss": loss.item(), "grad_norm": gn.item()}
            log(f"step {step} tok/s {stats['tokens_per_sec']:.1f}")
        if f == "warn_noise" and step == 2 and rank == 0:
            log("WARNING: grad norm 14.31 exceeds clip threshold 1.0; clipping")
        if rank == 0 and not args.pbar:
            log(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {args.lr:g} elapsed {time.time()-t0:.2f}s")
        if f == "ckpt_write" and step == fs and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step}.pt")
            with open(path, "wb") as fh:
                torch.save({"model": model.state_dict(), "step": step}, fh)
            log(f"saved {path}")
        if f == "longname" and step == fs and rank == 0:
            tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items())) * 3
            path = os.path.join(args.ckpt_dir, f"run-{tag}.pt")
            os.makedirs(args.ckpt_dir, exist_ok=True)
            torch.save({"model": model.state_dict(), "step": step}, path)
        step += 1
        if args.step_sleep:
            time.sleep(args.step_sleep)
    if rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        if f != "ckpt_write":
            torch.save({"model": model.state_dict(), "step": step}, os.path.join(args.ckpt_dir, "last.pt"))
        log(f"training finished: {step} steps")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
