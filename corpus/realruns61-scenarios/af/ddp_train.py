"""Tiny DDP language-model trainer (gloo/CPU) with selectable faults."""
import argparse, os, sys, time, math, logging, datetime, ctypes, resource, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=800)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=600)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--ckpt-dir", default="/work/rr61/af/work/ckpt")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--sched", default="cosine")
args = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"]); local_rank = int(os.environ["LOCAL_RANK"])
if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
def out(msg):
    if args.logfmt == "logging": log.info(msg)
    else: print(f"[rank{rank}] {msg}", flush=True)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
torch.manual_seed(0); torch.set_num_threads(1)

class LM(nn.Module):
    def __init__(s, vocab, h):
        super().__init__()
        s.emb = nn.Embedding(vocab, h); s.l1 = nn.Linear(h, h); s.aux = nn.Linear(h, 1); s.head = nn.Linear(h, vocab)
    def forward(s, x, use_aux=True):
        z = torch.tanh(s.l1(s.emb(x)))
        y = s.head(z)
        if use_aux: y = y + 0.0 * s.aux(z)
        return y

model = LM(args.vocab, args.hidden)
ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
if args.sched == "onecycle":
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps - 50)
else:
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
start = 0
if args.resume:
    out(f"resuming from {args.resume}")
    ck = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(ck["model"]); opt.load_state_dict(ck["optimizer"]); start = ck.get("step", 0)
    out(f"resumed at step {start}")

g = torch.Generator().manual_seed(1234 + rank)
vocab_data = args.vocab
if args.fault == "embedding-oob" and rank == args.fault_rank:
    vocab_data = args.vocab  # tokenizer has extra special tokens appended below
bar = None
if args.logfmt == "tqdm" and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=args.steps, initial=start, desc="train", mininterval=0.5)
t0 = time.time()
open_shards = []
for step in range(start, args.steps):
    x = torch.randint(0, vocab_data, (8, 16), generator=g)
    y = torch.roll(x, -1, 1)
    fr = (rank == args.fault_rank and step == args.fault_step)
    if fr and args.fault == "embedding-oob":
        # tokenizer added <|pad|>,<|sep|> at ids vocab, vocab+1 but embedding was never resized
        x[:, -1] = args.vocab + 1
    if fr and args.fault == "shape-mismatch":
        x = torch.randint(0, args.vocab, (8, 16), generator=g)
        emb_extra = True
    use_aux = not (args.fault == "unused-params" and step >= args.fault_step and step % 2 == 1)
    if args.fault == "shape-mismatch" and fr:
        # a batch with an extra positional feature concatenated: hidden + 8
        h = torch.cat([model.emb(x), torch.zeros(8, 16, 8)], -1)
        logits = model.head(torch.tanh(model.l1(h)))
    else:
        logits = ddp(x, use_aux=use_aux)
    if fr and args.fault == "loss-nan":
        logits = logits * torch.log(torch.zeros(()))  # "temperature" read from a corrupt sample = 0
    loss = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1))
    if not torch.isfinite(loss):
        out(f"Loss is {loss.item()}, stopping training")
        sys.exit(1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step(); sched.step()
    if fr and args.fault == "segfault":
        ctypes.string_at(0)
    if fr and args.fault == "cpu-oom":
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        big = torch.empty(64, 1024, 1024, 16)  # eval buffer for full-vocab logits
    if args.fault == "collective-mismatch" and step == args.fault_step and rank == args.fault_rank:
        t = torch.tensor([loss.item(), gn.item(), float(step)])
        dist.all_reduce(t)  # only rank fault_rank logs global metrics
    if args.fault == "monitored-barrier" and step == args.fault_step:
        if rank == args.fault_rank:
            out("running extra validation pass on this rank")
            s = 0.0
            t1 = time.time()
            while time.time() - t1 < 30: s += math.sin(s + 1.0)
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=8))
    if args.fault == "fd-leak":
        fpath = os.path.join(args.ckpt_dir, f"shard_{step % 50}.bin")
        if not os.path.exists(fpath):
            with open(fpath, "wb") as f: f.write(os.urandom(64))
        open_shards.append(open(fpath, "rb"))
    if args.ckpt_every and (step + 1) % args.ckpt_every == 0 and rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        path = os.path.join(args.ckpt_dir, f"step{step+1}.pt")
        import json
        with open(os.path.join(args.ckpt_dir, "trainer_state.json"), "w") as fh:
            json.dump({"global_step": step + 1, "loss": loss.item(), "lr": sched.get_last_lr()[0]}, fh)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step + 1,
                    "args": args}, path)
        out(f"saved checkpoint {path}")
    if bar is not None:
        bar.update(1); bar.set_postfix(loss=f"{loss.item():.4f}")
    if args.logfmt != "tqdm" or step % 50 == 0:
        out(f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.6f} tok/s {int(128*(step-start+1)/(time.time()-t0+1e-9))}")
if bar is not None: bar.close()
dist.barrier()
out(f"training finished, final loss {loss.item():.4f}")
dist.destroy_process_group()
