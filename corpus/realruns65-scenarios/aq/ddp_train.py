"""Tiny DDP training loop (gloo, CPU). --fault selects an induced failure on --fault-rank at --fault-step."""
import argparse, os, sys, time, math, json, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--ckpt-dir", default="/work/rr65/aq/tmp/ckpt")
p.add_argument("--logfmt", default="print")  # print | logging
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--noise", action="store_true")
args = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"[RANK {rank}] %(asctime)s [%(levelname)s] %(name)s: %(message)s", stream=sys.stdout)
    log = logging.getLogger("trainer")
    info, warn = log.info, log.warning
else:
    info = lambda m: print(f"[rank{rank}] {m}", flush=True)
    warn = lambda m: print(f"[rank{rank}] WARNING {m}", flush=True)

if args.fault == "cpu_limit" and rank == args.fault_rank:
    import resource
    _used = int(resource.getrusage(resource.RUSAGE_SELF).ru_utime + resource.getrusage(resource.RUSAGE_SELF).ru_stime)
    resource.setrlimit(resource.RLIMIT_CPU, (_used + 6, _used + 60))  # site cgroup/ulimit -t on this node
if args.fault == "fsize_limit" and rank == args.fault_rank:
    import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
if args.fault == "nofile" and rank == args.fault_rank:
    import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
if args.fault == "init_twice" and rank == args.fault_rank:
    # helper "setup_distributed()" re-run by a plugin
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
torch.manual_seed(0)

class LM(nn.Module):
    def __init__(s, vocab, hidden, extra=False):
        super().__init__()
        s.emb = nn.Embedding(vocab, hidden)
        s.l1 = nn.Linear(hidden, hidden)
        s.aux = nn.Linear(hidden, hidden)
        s.head = nn.Linear(hidden, vocab)
    def forward(s, x, use_aux=True):
        h = torch.tanh(s.l1(s.emb(x)))
        if use_aux:
            h = h + s.aux(h)
        return s.head(h)

hidden = args.hidden
if args.fault == "model_mismatch" and rank == args.fault_rank:
    hidden = int(os.environ.get("MODEL_HIDDEN", hidden))  # stale env on one node
model = LM(args.vocab, hidden)
ddp = DDP(model, find_unused_parameters=(args.noise))
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
info(f"world_size={world} params={sum(p.numel() for p in model.parameters())}")
if args.noise:
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)

g = torch.Generator().manual_seed(1234 + rank)
shard_offset = 0
metrics = {"loss": 0.0, "tokens": 0}
for step in range(args.steps):
    x = torch.randint(0, args.vocab, (8, 16), generator=g)
    y = torch.roll(x, -1, 1)
    f_here = (rank == args.fault_rank and step == args.fault_step)
    if args.fault == "emb_oob" and f_here:
        # shard tokenized with a bigger tokenizer (added special tokens)
        x = x + args.vocab // 2 + 8
    if args.fault == "shape" and f_here:
        x = x.reshape(16, 8)  # packing bug: seq_len from wrong config
        y = y.reshape(-1)
    if args.fault == "dtype" and f_here:
        x = x.float()
    out = ddp(x, use_aux=not (args.fault == "unused" and rank == args.fault_rank and step >= args.fault_step))
    if args.fault == "shape" and f_here:
        loss = F.cross_entropy(out.reshape(-1, args.vocab), y.reshape(8, 16))
    else:
        loss = F.cross_entropy(out.reshape(-1, args.vocab), y.reshape(-1))
    if args.fault == "nan" and f_here:
        loss = loss * torch.log(torch.zeros(()))  # log(0) from an empty-mask normaliser
    if not torch.isfinite(loss):
        raise FloatingPointError(f"Loss is {loss.item()} at step {step}, stopping training")
    opt.zero_grad(); loss.backward(); opt.step()
    if args.fault == "collective" and f_here:
        # rank-local metrics buffer has extra entry on this rank
        stats = torch.tensor([loss.item(), 16.0, 1.0])
    else:
        stats = torch.tensor([loss.item(), 16.0])
    dist.all_reduce(stats)
    if args.fault == "user_code" and f_here:
        metrics["ppl"] += math.exp(stats[0].item() / world)
    if args.fault == "oom_alloc" and f_here:
        n_tok = int(stats[1].item()) * 8 * world
        buf = torch.empty(n_tok, args.vocab, args.vocab, hidden, hidden * 1000000)  # logits cache sized with wrong dims
    if args.fault == "segv" and f_here:
        import ctypes
        ctypes.string_at(0)  # native helper dereferences a null buffer
    if args.fault == "hang" and f_here:
        time.sleep(120)  # stuck on an NFS read
    if args.fault == "monitored" and step == args.fault_step:
        if rank == args.fault_rank:
            time.sleep(60)
        dist.monitored_barrier(timeout=timedelta(seconds=8))
    if args.fault == "cpu_limit" and rank == args.fault_rank and step == args.fault_step:
        t = torch.randn(300, 300)
        while True:
            t = torch.tanh(t @ t)
    if args.noise and rank == 0 and step == 3:
        warn("grad norm 412.77 exceeds clip threshold 1.0; gradients clipped")
        warn("Detected loss spike: 9.81 > 3x running mean 3.02 (step 3), continuing")
    if rank == 0 or args.logfmt == "logging":
        info(f"step {step} loss {stats[0].item()/world:.4f} lr 1.0e-03")
    time.sleep(0.2)
    if step in (args.steps // 2, args.steps - 1) and args.fault in ("ckpt_perm", "ckpt_full", "fsize_limit", "nofile", "none"):
        if args.fault == "ckpt_perm" and rank == args.fault_rank:
            os.setuid(65534)  # job runs as a service account on this node
        d = args.ckpt_dir
        if args.fault == "ckpt_full" and rank == args.fault_rank:
            d = args.ckpt_dir + "_full"
        if args.fault == "nofile" and rank == args.fault_rank:
            held = [open(os.path.join("/work/rr65/aq/tmp", f"shard_{i}.idx"), "a") for i in range(60)]  # index files never closed
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"rank{rank}_step{step}.pt")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "big": torch.randn(64, 1024)}, path)
        info(f"saved checkpoint {path}")
        dist.barrier()
info("training finished")
dist.destroy_process_group()
