"""Tiny GPT-2 language-model training (single process, or DDP when launched by torchrun) used
under outside resource limits: ulimit -v / prlimit --as, ulimit -f, ulimit -t, a small tmpfs,
a read-only checkpoint dir.  The script itself is ordinary training code."""
import argparse, io, os, sys, time, math, logging
from datetime import timedelta
import torch, torch.nn as nn
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--eval-batch", type=int, default=16)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--ckpt-writer", choices=["torch", "file"], default="file")
p.add_argument("--keep-all", action="store_true")
p.add_argument("--resume", action="store_true")
p.add_argument("--rundir", default="")
p.add_argument("--fmt", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s | %(levelname)-7s | rank{rank} | %(message)s")
log = logging.getLogger("lm")
def say(m):
    if args.fmt == "logging": log.info(m)
    else: print((f"[rank{rank}] " if distributed else "") + m, flush=True)

if args.rundir:
    os.makedirs(args.rundir, exist_ok=True)
    open(f"{args.rundir}/rank{rank}.pid", "w").write(str(os.getpid()))

torch.set_num_threads(1)
from transformers import GPT2Config, GPT2LMHeadModel
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    say(f"process group ready (world_size={world})")
cfg = GPT2Config(vocab_size=args.vocab, n_positions=max(128, args.seq), n_embd=args.n_embd,
                 n_layer=args.n_layer, n_head=4)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
say(f"model: GPT2 {sum(p.numel() for p in model.parameters())/1e6:.2f}M params, vocab={args.vocab}, seq={args.seq}")
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)

def batch(n):
    # a simple learnable synthetic language: next token = (tok*3+1) % vocab with noise
    start = torch.randint(0, args.vocab, (n, 1), generator=g)
    seq = [start]
    for _ in range(args.seq - 1):
        seq.append((seq[-1] * 3 + 1) % args.vocab)
    return torch.cat(seq, 1)

def save_ckpt(step):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    name = f"step{step:05d}.pt" if args.keep_all else "last.pt"
    path = os.path.join(args.ckpt_dir, name)
    state = {"step": step, "model": (model.module if distributed else model).state_dict(),
             "optim": opt.state_dict()}
    if args.ckpt_writer == "torch":
        torch.save(state, path)
    else:
        buf = io.BytesIO(); torch.save(state, buf)
        with open(path + ".tmp", "wb") as f:        # write then rename, like most trainers
            view = buf.getbuffer()
            for off in range(0, len(view), 1 << 20):
                f.write(view[off:off + (1 << 20)])
            f.flush(); os.fsync(f.fileno())
        os.replace(path + ".tmp", path)
    say(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.1f} MB)")

start = 1
if args.resume and args.ckpt_dir and os.path.exists(os.path.join(args.ckpt_dir, "last.pt")):
    path = os.path.join(args.ckpt_dir, "last.pt")
    say(f"resuming from {path} ({os.path.getsize(path)/1e6:.1f} MB)")
    state = torch.load(path, map_location="cpu")
    (model.module if distributed else model).load_state_dict(state["model"])
    opt.load_state_dict(state["optim"]); start = state["step"] + 1
    say(f"resumed at step {start}")
it = range(start, args.steps + 1)
if args.fmt == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="epoch 0", ncols=100, mininterval=0.3)
t0 = time.time()
for step in it:
    model.train()
    ids = batch(args.batch)
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad(); out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if args.step_sleep: time.sleep(args.step_sleep)
    if args.rundir:
        open(f"{args.rundir}/rank{rank}.step", "w").write(str(step))
    if step % 5 == 0:
        msg = f"step {step}/{args.steps} loss {out.loss.item():.4f} ppl {math.exp(min(out.loss.item(), 20)):.1f} {(time.time()-t0)/step:.3f}s/it"
        if args.fmt == "tqdm" and rank == 0: it.set_postfix_str(f"loss={out.loss.item():.3f}")
        elif args.fmt != "tqdm": say(msg)
    if args.eval_every and step % args.eval_every == 0:
        model.eval()
        with torch.no_grad():
            ids = batch(args.eval_batch)
            ev = model(input_ids=ids, labels=ids).loss
        say(f"eval step {step}: loss {ev.item():.4f} (eval batch {args.eval_batch})")
    if args.ckpt_every and step % args.ckpt_every == 0 and rank == 0:
        save_ckpt(step)
if distributed:
    dist.barrier(); dist.destroy_process_group()
say("done")
