"""Tiny DDP training job used under the job wrapper. --fault selects an induced failure."""
import argparse, os, sys, time, logging, warnings, datetime, resource
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--ckpt-dir", default="/work/rr83/cs/tmp/ckpt")
p.add_argument("--resume", default="")
p.add_argument("--data", default="")
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--dl-timeout", type=int, default=0)
p.add_argument("--cycle", action="store_true")
p.add_argument("--vocab", type=int, default=100)
args = p.parse_args()

if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
log = logging.getLogger("train")

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
torch.manual_seed(0)

class TokDS(Dataset):
    def __init__(self, n=256, seqlen=16, vocab=100, bad_idx=None):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randint(0, vocab, (n, seqlen), generator=g)
        self.bad_idx = bad_idx
        self.vocab = vocab
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.bad_idx is not None and i == self.bad_idx:
            if args.fault == "worker-kill":
                os.kill(os.getpid(), 9)  # stands in for the kernel OOM killer picking this worker
            if args.fault == "slow-read":
                time.sleep(15)  # record lives on a stalled network mount
            else:
                x = x[:-3]  # a truncated record
        return {"input_ids": x, "labels": x.roll(-1)}

class LM(nn.Module):
    def __init__(self, vocab=100, d=64, extra=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blk = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        if extra:
            self.aux = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)
    def forward(self, x):
        h = self.emb(x)
        h = h + self.blk(h)
        return self.head(h)

if args.noise and rank == 0:
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)
    log.warning("NCCL_ASYNC_ERROR_HANDLING is deprecated in favor of TORCH_NCCL_ASYNC_ERROR_HANDLING")

if args.fault == "alarm-healthy":
    try:
        import wandb  # optional tracker
    except ImportError:
        log.exception(f"[rank{rank}] experiment tracker unavailable, continuing with stdout metrics only")
    try:
        torch.load(os.path.join(args.ckpt_dir, "auto_resume", "latest.pt"), map_location="cpu")
    except FileNotFoundError as e:
        log.warning(f"[rank{rank}] auto-resume: no checkpoint found ({e}); starting from scratch")
vocab = args.vocab
model = LM(vocab=args.vocab,
           extra=(args.fault == "model-mismatch" and rank == args.fault_rank))
if distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

if args.resume:
    log.info(f"[rank{rank}] resuming from {args.resume}")
    if args.fault == "weights-only":
        sd = torch.load(args.resume)
    else:
        sd = torch.load(args.resume, map_location="cpu", weights_only=False)
    (model.module if distributed else model).load_state_dict(sd["model"])
    opt.load_state_dict(sd["optim"])
    log.info(f"[rank{rank}] resumed at step {sd.get('step')}")

bad_idx = None
if args.fault in ("collate", "worker-kill", "slow-read") and rank == args.fault_rank:
    bad_idx = 8 * args.fault_step + 3
ds = TokDS(vocab=vocab, bad_idx=bad_idx)
if args.data:
    import json
    with open(args.data) as f:
        meta = json.load(f)
    log.info(f"[rank{rank}] dataset manifest: {meta}")
sampler = torch.utils.data.distributed.DistributedSampler(ds, shuffle=False) if distributed else None
dl = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=args.workers, timeout=args.dl_timeout)
lossf = nn.CrossEntropyLoss()

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", ncols=80)
dli = iter(dl)
t0 = time.time()
for step in it:
    try:
        batch = next(dli)
    except StopIteration:
        if not args.cycle:
            raise
        dli = iter(dl); batch = next(dli)
    x, y = batch["input_ids"], batch["labels"]
    if args.fault == "embed-oor" and rank == args.fault_rank and step == args.fault_step:
        x = x + 60  # tokenizer with a bigger vocab than the model
    out = model(x)
    if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
        loss = lossf(out, y)  # forgot to flatten
    else:
        loss = lossf(out.view(-1, out.size(-1)), y.view(-1))
    if args.fault == "nan" and step >= args.fault_step:
        for g in opt.param_groups: g["lr"] = 1e12
    if not torch.isfinite(loss):
        raise FloatingPointError(f"rank {rank}: loss is {loss.item()} at step {step}")
    opt.zero_grad()
    loss.backward()
    opt.step()
    if args.fault == "collective" and step == args.fault_step:
        t = torch.ones(4 if rank != args.fault_rank else 6)
        dist.all_reduce(t)
    if args.fault == "collective-op" and step == args.fault_step:
        t = torch.ones(4)
        if rank == args.fault_rank:
            dist.broadcast(t, src=0)  # eval path on this rank only
        else:
            dist.all_reduce(t)
    if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step:
        log.info(f"[rank{rank}] waiting for eval lock /work/rr83/cs/tmp/eval.lock")
        while os.path.exists("/work/rr83/cs/tmp/eval.lock"):
            time.sleep(1)
    if args.fault == "sigkill" and rank == args.fault_rank and step == args.fault_step:
        os.kill(os.getpid(), 9)
    if args.fault == "oom" and rank == args.fault_rank and step == args.fault_step:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))
        acts = torch.empty(64, 1024, 1024, 16)  # activation buffer for long-context eval
    if args.fault == "nofile" and rank == args.fault_rank and step == args.fault_step:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        shards = [open(f"/work/rr83/cs/tmp/shards/part-{i:05d}.bin", "wb") for i in range(200)]
    if rank == 0 and (step % 2 == 0 or step == args.steps - 1):
        log.info(f"step {step} | loss {loss.item():.4f} | lr {opt.param_groups[0]['lr']:.2e} | {(time.time()-t0)/(step+1):.3f}s/it")
    if args.fault in ("ckpt-perm", "ckpt-missing-dir") and step == args.fault_step and rank == 0:
        path = os.path.join(args.ckpt_dir, f"step{step}.pt")
        log.info(f"saving checkpoint to {path}")
        torch.save({"model": (model.module if distributed else model).state_dict(), "optim": opt.state_dict(), "step": step}, path)
    if distributed:
        dist.barrier()

if rank == 0:
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, "last.pt")
    torch.save({"model": (model.module if distributed else model).state_dict(), "optim": opt.state_dict(), "step": args.steps, "args": args}, path)
    log.info(f"saved {path}")
if distributed:
    dist.barrier()
    dist.destroy_process_group()
log.info(f"[rank{rank}] done")
