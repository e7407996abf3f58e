"""Small DDP / single-process training script with selectable real faults.

--fault selects the bug, --fault-rank / --fault-step where it happens.
"""
import argparse, os, sys, time, json, warnings, logging, math
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--single", action="store_true", help="no process group")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--noise", action="store_true", help="emit the usual warnings")
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--data-dir", default="data")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--pg-timeout", type=int, default=20)
args = p.parse_args()

if args.single:
    rank, world = 0, 1
else:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.use_logging:
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


torch.manual_seed(0)
is_fault_rank = (rank == args.fault_rank) or args.single


class TokDataset(Dataset):
    def __init__(self, n=256, seqlen=16):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randint(0, args.vocab, (n, seqlen), generator=g)
        self.n = n
        self.seqlen = seqlen
        self.files = []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.x[i].clone()
        if args.fault == "embed" and is_fault_rank and i % 7 == 3:
            # tokenizer of the new data shard emits ids from a larger vocab
            x[-1] = args.vocab + 28
        if args.fault == "collate" and i % 5 == 0:
            # variable-length record slipped through (no padding/truncation)
            x = torch.cat([x, x[:3]])
        if args.fault == "worker_keyerror":
            rec = {"input_ids": x, "labels": x}
            if i == 37:
                rec = {"input_ids": x}  # record without labels in the jsonl shard
            return rec["input_ids"], rec["labels"]
        if args.fault == "nofile":
            # open the shard for each sample and never close it
            f = open(os.path.join(args.data_dir, f"shard_{i % 4}.bin"), "rb")
            self.files.append(f)
            f.read(16)
        return x, x


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.l1 = nn.Linear(hidden, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, vocab)
        if args.fault == "unused":
            self.aux_head = nn.Linear(hidden, 4)  # only used when aux loss enabled

    def forward(self, x):
        h = self.emb(x)
        h = torch.relu(self.l1(h))
        if args.fault == "inplace":
            h2 = torch.sigmoid(self.l2(h))
            h2 += 1.0  # in-place on a tensor sigmoid saved for backward
            h = h2
        else:
            h = h + torch.tanh(self.l2(h))
        return self.head(h)


hidden = args.hidden
if args.fault == "ddp_model" and rank == args.fault_rank:
    hidden = args.hidden * 2  # rank read a different config
model = TinyLM(args.vocab, hidden)

if args.resume:
    say(f"resuming from {args.resume}")
    sd = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(sd["model"] if "model" in sd else sd)

if not args.single:
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(model, find_unused_parameters=(args.noise))

opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

if args.fault == "missing_data" and is_fault_rank:
    path = os.path.join(args.data_dir, f"train-{rank:05d}-of-{world:05d}.pt")
    say(f"loading shard {path}")
    ds_t = torch.load(path)

ds = TokDataset()
sampler = None if args.single else DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
dl = DataLoader(ds, batch_size=8, sampler=sampler, shuffle=(sampler is None), num_workers=args.workers)

if args.noise:
    warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors.",
                  UserWarning)
    sched.step()  # called before optimizer.step(): torch warns about order

say(f"world_size={world} params={sum(p.numel() for p in model.parameters())} lr={args.lr}")

it = iter(dl)
rng = range(args.steps)
if args.use_tqdm and rank == 0:
    from tqdm import tqdm
    rng = tqdm(rng, desc="train", file=sys.stderr, mininterval=0, ascii=True)

os.makedirs(args.ckpt_dir, exist_ok=True) if args.fault not in ("perm", "longname") else None
metrics = {"loss": [], "ppl": []}
t0 = time.time()
for step in rng:
    try:
        x, y = next(it)
    except StopIteration:
        it = iter(dl)
        x, y = next(it)
    if args.fault == "shape" and is_fault_rank and step == args.fault_step:
        # the preprocessing for this rank's shard produced a flattened batch
        x = x.reshape(-1)
        y = y[:, :-1]
    if args.fault == "hang" and is_fault_rank and step == args.fault_step:
        say("fetching next shard from object store ...")
        import faulthandler
        faulthandler.dump_traceback_later(10, exit=False)
        while True:  # retry loop that never gets its answer
            time.sleep(1)
    if args.fault == "slowbar" and step == args.fault_step:
        if rank == args.fault_rank:
            say("writing eval predictions ...")
            time.sleep(60)
        dist.monitored_barrier(timeout=timedelta(seconds=8), wait_all_ranks=True)
    if args.fault == "segv" and is_fault_rank and step == args.fault_step:
        import ctypes, faulthandler
        faulthandler.enable()
        # reading a buffer the C extension already freed
        ctypes.string_at(0)
    if args.fault == "interrupt" and step == args.fault_step:
        pass
    if args.fault == "oom" and is_fault_rank and step == args.fault_step:
        # eval on the full 'validation' set in one batch
        big = torch.randint(0, args.vocab, (60000, 512))
        logits = model(big)
    logits = model(x)
    if args.fault == "unused":
        pass
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    if args.fault == "dtype" and is_fault_rank and step == args.fault_step:
        loss = loss + (logits.double() @ torch.ones(args.vocab, dtype=torch.float32)).mean()
    opt.zero_grad()
    loss.backward()
    if args.fault == "nan":
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    opt.step()
    sched.step()
    lval = loss.item()
    metrics["loss"].append(lval)
    if args.fault == "nan" and not math.isfinite(lval):
        say(f"step {step} loss={lval}")
        raise FloatingPointError(f"Loss is {lval} at step {step}; stopping (check lr / grad clipping)")
    if args.fault == "keyerror" and step == args.fault_step and rank == 0:
        say(f"step {step} eval ppl={metrics['val_ppl'][-1]:.2f}")
    if step % 2 == 0 or args.fault == "nan":
        say(f"step {step} loss={lval:.4f} lr={sched.get_last_lr()[0]:.2e} {time.time()-t0:.1f}s")
    if args.noise and step == 2 and rank == 0:
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`.", UserWarning)
    if args.fault == "interrupt":
        time.sleep(1.0)
    if args.fault in ("perm", "ckpt", "longname", "fsize") and step == args.fault_step and rank == 0:
        sd = (model.module if hasattr(model, "module") else model).state_dict()
        if args.fault == "longname":
            tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items()))
            path = os.path.join(args.ckpt_dir, f"ckpt_step{step}_{tag}" * 3 + ".pt")
        else:
            path = os.path.join(args.ckpt_dir, f"step{step}.pt")
        say(f"saving checkpoint to {path}")
        if args.fault == "fsize":
            import io
            buf = io.BytesIO(); torch.save({"model": sd, "opt": opt.state_dict()}, buf)
            with open(path, "wb") as f:
                f.write(buf.getvalue())
        else:
            torch.save({"model": sd}, path)
        say("checkpoint saved")

if not args.single:
    dist.barrier()
say(f"done: final loss {metrics['loss'][-1]:.4f}")
if rank == 0:
    sd = (model.module if hasattr(model, "module") else model).state_dict()
    torch.save({"model": sd}, os.path.join(args.ckpt_dir, "final.pt"))
if not args.single:
    dist.destroy_process_group()
