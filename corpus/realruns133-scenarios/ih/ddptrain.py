"""Small DDP (gloo, CPU) trainer with selectable real faults.
Flags: --fault NAME --fault-rank R --fault-step S. Works under torchrun, mp.spawn (--spawn N) or plain python."""
import argparse, os, sys, math, time, json, warnings, logging
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--nworkers", type=int, default=0)
p.add_argument("--bar", action="store_true")
p.add_argument("--pylog", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--data-dir", default="data")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--lr", type=float, default=0.05)
args = p.parse_args()

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

VOCAB = 50


class TokDS(Dataset):
    def __init__(self, n=256, seqlen=16, fault="none", rank=0):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, VOCAB, (n, seqlen), generator=g)
        self.fault, self.rank = fault, rank
        self.meta = {i: {"len": seqlen} for i in range(n - 7)}  # metadata index built from an older shard list

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.fault == "worker-keyerror":
            L = self.meta[i]["len"]
        elif self.fault == "ragged":
            L = 16 if i % 5 else 12 + (i % 3)   # some records shorter, no padding
        elif self.fault == "worker-segv" and i == 90:
            import ctypes
            ctypes.string_at(0)                 # bad pointer deref in a native decoder
            L = 16
        else:
            L = 16
        seq = self.x[i, :L]
        return seq[:-1], seq[1:]


class LM(nn.Module):
    def __init__(self, d=32, vocab=VOCAB, extra_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)
        self.aux = nn.Linear(d, 1) if extra_head else None

    def forward(self, x, use_aux=True):
        h, _ = self.rnn(self.emb(x))
        if self.aux is not None and use_aux:
            return self.out(h), self.aux(h).mean()
        return self.out(h), None


def main(rank=None, world=None):
    if rank is None:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
    else:
        os.environ["RANK"] = str(rank)
    distributed = world > 1
    if args.pylog:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = (lambda m: log.info(m)) if args.pylog else (lambda m: print(m, flush=True))

    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(1234)
    fault = args.fault if (rank == args.fault_rank or args.fault_rank < 0) else "none"
    # faults that live in the data pipeline apply to every rank's dataset only if chosen
    ds_fault = fault if fault in ("worker-keyerror", "ragged", "worker-segv") else "none"

    os.makedirs(args.ckpt_dir, exist_ok=True) if fault == "fds" else None
    if fault == "missing-data":
        path = os.path.join(args.data_dir, f"shard-{rank:05d}.pt")
        data = torch.load(path)
    if fault == "import":
        import sentencepiece_fast  # noqa  (tokenizer backend from the cluster image)

    d = 32
    if fault in ("model-mismatch", "resume-wide"):
        d = 48  # this rank read hidden size from an older config
    model = LM(d=d, extra_head=(args.fault == "unused-param"))
    if fault == "vocab-oob":
        model = LM(d=d, vocab=VOCAB - 2)   # tokenizer vocab larger than model vocab
    if fault in ("resume-ckpt", "resume-wide"):
        os.makedirs(args.ckpt_dir, exist_ok=True)
        ck = os.path.join(args.ckpt_dir, "last.pt")
        sd = torch.load(ck, map_location="cpu")
        model.load_state_dict(sd["model"])
        say(f"[rank{rank}] resumed from {ck} step {sd.get('step')}")
    if fault == "big-alloc":
        # precompute an n-gram table for the tokenizer: VOCAB^4 counts in float64
        table = torch.zeros(VOCAB ** 2 * 4000, VOCAB * 40, dtype=torch.float64)
    if distributed:
        ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=(args.fault == "unused-ok"))
    else:
        ddp = model
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr * (1e6 if fault == "nan" else 1.0), momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    ds = TokDS(fault=ds_fault, rank=rank)
    if fault == "empty":
        # keep only sequences longer than the configured max length (flag meant min_len)
        keep = [k for k in range(len(ds)) if ds.x.shape[1] > 16]
        ds = torch.utils.data.Subset(ds, keep)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=(sampler is None),
                    num_workers=args.nworkers, persistent_workers=False)
    say(f"[rank{rank}] world={world} params={sum(p.numel() for p in model.parameters())} "
        f"batches/epoch={len(dl)} workers={args.nworkers}")
    if args.fault == "sched-warn":
        sched.step()  # stepping the scheduler first: harmless warning
    step = 0
    it = iter(dl)
    bar = None
    if args.bar and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr, mininterval=0)
    open_files = []
    while step < args.steps:
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl)
            x, y = next(it)
        if fault == "dtype" and step == args.fault_step:
            x = x  # mixing features from the float64 numpy cache
            feats = torch.from_numpy(__import__("numpy").random.rand(x.shape[0], 32))
            proj = model.out.weight.t()[:32, :32] if False else torch.randn(32, 32)
            _ = feats @ model.rnn.weight_ih_l0[:32].t()
        if fault == "stall" and step == args.fault_step:
            # wait for the preprocessing job to drop its marker file (it never does)
            t0 = time.time()
            while not os.path.exists(os.path.join(args.data_dir, "READY")) and time.time() - t0 < 60:
                time.sleep(1)
        logits, aux = ddp(x)
        if fault == "shape" and step == args.fault_step:
            loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(16, -1))
        elif fault == "target-float" and step == args.fault_step:
            loss = F.nll_loss(F.log_softmax(logits, -1).view(-1, VOCAB), y.view(-1).float())
        elif fault == "nan-weights" and step >= args.fault_step:
            # class-balanced weights from this batch's token counts
            cnt = torch.bincount(y.reshape(-1), minlength=VOCAB).float()
            w = 1.0 / cnt
            w = w / w.sum()
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), weight=w)
        else:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        if aux is not None and not (args.fault == "unused-param" and step >= 1):
            loss = loss + 0.01 * aux
        if args.fault.startswith("nan") and not torch.isfinite(loss):
            raise RuntimeError(f"Non-finite loss {loss.item()} at step {step} on rank {rank}; aborting (NaN guard)")
        opt.zero_grad()
        loss.backward()
        if fault == "backward-twice" and step == args.fault_step:
            (0.1 * loss).backward()   # extra regularizer term reusing the graph
        if fault == "segv" and step == args.fault_step:
            import ctypes
            ctypes.string_at(0)       # bug in a native helper: null pointer
        if fault == "fds" and step >= 1:
            # per-step metric dump that never closes its handles
            for k in range(40):
                open_files.append(open(os.path.join(args.ckpt_dir, f"m{rank}_{step}_{k}.json"), "w"))
        opt.step()
        sched.step()
        metrics = {"loss": loss.item(), "lr": sched.get_last_lr()[0]}
        if fault == "metric-key" and step == args.fault_step:
            metrics["ppl"] = math.exp(metrics["val_loss"])
        if bar is not None:
            bar.set_postfix(loss=f"{metrics['loss']:.3f}")
            bar.update(1)
        if args.fault == "warn-noise" and step == 1:
            ent = -(F.softmax(logits[0, 0]) * F.log_softmax(logits[0, 0])).sum()
            hist = torch.tensor(loss.detach())
            say(f"[rank{rank}] entropy {ent.item():.3f} hist {hist.item():.3f}")
        if fault == "unicode" and step == args.fault_step:
            say(f"[rank{rank}] step {step} loss {metrics['loss']:.4f} ↓  lr {metrics['lr']:.4g} ✓")
        if step % 2 == 0 or step == args.steps - 1:
            say(f"[rank{rank}] step {step} loss {metrics['loss']:.4f} lr {metrics['lr']:.4g}")
        step += 1
        if fault == "slow":
            time.sleep(0.05)
    if bar is not None:
        bar.close()
    if rank == 0 or fault in ("ckpt-ro", "ckpt-full", "fsize"):
        os.makedirs(args.ckpt_dir, exist_ok=True)
        if fault == "ckpt-full":
            with open("/dev/full" if True else "", "wb") as f:
                torch.save({"model": model.state_dict(), "step": step}, f)
                f.flush()
        elif fault == "fsize":
            with open(os.path.join(args.ckpt_dir, f"log-r{rank}.jsonl"), "w") as f:
                for i in range(20000):
                    f.write(json.dumps({"step": i, "emb": model.emb.weight[i % VOCAB].tolist()}) + "\n")
        else:
            with open(os.path.join(args.ckpt_dir, "last.pt"), "wb") as f:
                torch.save({"model": model.state_dict(), "step": step}, f)
        say(f"[rank{rank}] saved checkpoint to {args.ckpt_dir}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    say(f"[rank{rank}] done")


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "46410")
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
