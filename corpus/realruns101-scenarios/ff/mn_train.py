"""Tiny DDP trainer used for the simulated two-node runs (realrun set 101, producer ff).

Flags select the fault; a fault is only armed on the launcher that receives the flag
(i.e. one 'node'), on the local rank given by --fault-local-rank, at step --fault-step.
"""
import argparse, ctypes, fcntl, json, logging, math, os, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-local-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--model", default="mlp", choices=["mlp", "lm", "tp"])
p.add_argument("--data-dir", default=None)
p.add_argument("--num-workers", type=int, default=0)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--resume", default=None)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--noisy", action="store_true", help="emit the usual warnings of a real run")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--script-version", default="v2")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--dump-preds-every", type=int, default=0)
args = p.parse_args()

rank = int(os.environ["RANK"]) if "RANK" in os.environ else None
local_rank = int(os.environ.get("LOCAL_RANK", 0))
host = os.environ.get("NODE_NAME", os.uname().nodename)

if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")

def say(msg):
    if args.use_logging:
        log.info(msg)
    else:
        print(msg, flush=True)

def armed(step=None):
    if args.fault == "none" or local_rank != args.fault_local_rank:
        return False
    return step is None or step == args.fault_step

# ---------------------------------------------------------------- data
class SynthDataset(Dataset):
    def __init__(self, n, dim, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, dim, generator=g)
        self.y = (self.x[:, :4].sum(1) > 0).long()
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

class JsonlDataset(Dataset):
    """One sample per line of <data-dir>/train.jsonl, re-opened per item (bounded memory)."""
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.offsets = []
            off = 0
            for line in f:
                self.offsets.append(off)
                off += len(line.encode())
        self.handles = []
    def __len__(self): return len(self.offsets)
    def __getitem__(self, i):
        f = open(self.path)          # handle cached "for speed" and never closed
        self.handles.append(f)
        f.seek(self.offsets[i])
        rec = json.loads(f.readline())
        return torch.tensor(rec["x"], dtype=torch.float32), torch.tensor(rec["y"])

class TokenDataset(Dataset):
    def __init__(self, path_or_none, n, vocab, seq=16):
        if path_or_none:
            with open(path_or_none) as f:
                vocab_map = json.load(f)
            ids = list(vocab_map.values())
            g = torch.Generator().manual_seed(0)
            self.tok = torch.tensor(ids)[torch.randint(len(ids), (n, seq + 1), generator=g)]
        else:
            g = torch.Generator().manual_seed(0)
            self.tok = torch.randint(vocab, (n, seq + 1), generator=g)
    def __len__(self): return len(self.tok)
    def __getitem__(self, i): return self.tok[i, :-1], self.tok[i, 1:]

# ---------------------------------------------------------------- models
class MLP(nn.Module):
    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 2)
    def forward(self, x):
        h = F.gelu(self.fc1(x))
        if args.fault == "lognan" and armed() and self.training and getattr(self, "_step", -1) >= args.fault_step:
            h = torch.log(h)          # "log-features" variant from the old branch
        return self.head(F.gelu(self.fc2(h)))

class TinyLM(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)
    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)

class ColumnParallelMLP(nn.Module):
    """Megatron-style split of the hidden dim across the world."""
    def __init__(self, dim, hidden, world):
        super().__init__()
        if hidden % world != 0:
            raise ValueError(f"hidden size ({hidden}) must be divisible by the tensor-parallel world size ({world})")
        self.fc1 = nn.Linear(dim, hidden // world)
        self.head = nn.Linear(hidden // world, 2)
    def forward(self, x):
        return self.head(F.gelu(self.fc1(x)))

# ---------------------------------------------------------------- main
def main():
    if args.noisy:
        warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use torch.utils._pytree.register_pytree_node instead.", FutureWarning)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    world = dist.get_world_size(); r = dist.get_rank()
    say(f"[{host}] rank {r}/{world} local_rank {local_rank} script {args.script_version} pid {os.getpid()}")
    torch.manual_seed(1234)

    if args.model == "lm":
        vocab_file = os.path.join(args.data_dir, "vocab.json") if args.data_dir else None
        ds = TokenDataset(vocab_file, 256, args.vocab)
        model = TinyLM(args.vocab, args.hidden)
    elif args.model == "tp":
        ds = SynthDataset(512, 32, 0)
        model = ColumnParallelMLP(32, args.hidden, world)
    else:
        if args.data_dir:
            ds = JsonlDataset(os.path.join(args.data_dir, "train.jsonl"))
        else:
            ds = SynthDataset(300 if args.fault == "viewbug" else 512, 32, 0)
        model = MLP(32, args.hidden)

    if args.resume:
        say(f"[{host}] resuming from {args.resume}")
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])

    ddp = DDP(model) if args.model != "tp" else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sampler = DistributedSampler(ds, num_replicas=world, rank=r, shuffle=True, seed=0, drop_last=False)
    dl = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers,
                    persistent_workers=args.num_workers > 0)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)

    it = iter(dl)
    bar = None
    if args.tqdm and r == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=90, file=sys.stderr)
    t0 = time.time()
    step = 0
    cache_lock = os.path.join("/tmp", f"rr101ff-cache-{os.getpid()}.lock")
    while step < args.steps:
        try:
            x, y = next(it)
        except StopIteration:
            sampler.set_epoch(step); it = iter(dl); x, y = next(it)
        model._step = step
        if args.monitored_barrier and step % 3 == 2:
            dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
        if args.fault == "viewbug" and armed():
            # old code path: flattens with the configured batch size instead of x.size(0)
            x = x.view(args.batch_size, -1) if step >= args.fault_step else x
        if args.fault == "keyerror" and armed(step):
            sched = {"warmup": 1e-3, "cosine": 3e-3}
            for g in opt.param_groups:
                g["lr"] = sched[os.environ.get("LR_SCHED", "linear")]
        if args.fault == "segv" and armed(step):
            say(f"[{host}] rank {r}: loading fused kernel table")
            ctypes.string_at(0)          # NULL pointer read in a native helper
        if args.fault == "hostalloc" and armed(step):
            say(f"[{host}] rank {r}: building full-vocab logit cache")
            cache = torch.empty(64 * 1024**3 // 4, dtype=torch.float32)
        if args.model == "tp":
            out = model(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            for prm in model.parameters():
                dist.all_reduce(prm.grad)
        else:
            out = ddp(x)
            if args.model == "lm":
                loss = F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
            else:
                loss = F.cross_entropy(out, y)
            loss.backward()
        opt.step(); opt.zero_grad(set_to_none=True)
        if args.script_version == "v1" and step >= args.fault_step:
            # v1 reports loss+acc (2 values), v2 reports loss+acc+samples (3 values)
            m = torch.tensor([loss.item(), 0.5])
        else:
            m = torch.tensor([loss.item(), 0.5, float(x.size(0))])
        dist.all_reduce(m)
        if args.fault == "hang" and armed(step):
            say(f"[{host}] rank {r}: refreshing shared feature cache")
            a = open(cache_lock, "w"); fcntl.flock(a, fcntl.LOCK_EX)
            b = open(cache_lock, "w"); fcntl.flock(b, fcntl.LOCK_EX)   # second handle: self-deadlock
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if args.ckpt_dir and args.save_every and (step + 1) % args.save_every == 0 and r == 0:
            path = os.path.join(args.ckpt_dir, f"step{step+1:05d}.pt")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, path)
            say(f"[{host}] saved checkpoint {path}")
        if args.dump_preds_every and args.ckpt_dir and (step + 1) % args.dump_preds_every == 0 and r == 0:
            with torch.no_grad():
                probs = torch.softmax(model(torch.randn(4000, 32)), -1).tolist()
            path = os.path.join(args.ckpt_dir, f"eval_preds_step{step+1:05d}.json")
            with open(path, "w") as f:
                json.dump({"step": step + 1, "probs": probs}, f)
            say(f"[{host}] wrote eval predictions {path}")
        if bar is not None:
            bar.update(1); bar.set_postfix(loss=f"{loss.item():.4f}")
        elif r == 0 or args.fault != "none":
            say(f"[{host}] rank {r} step {step:4d} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e} {(time.time()-t0)/(step+1)*1000:.0f}ms/it")
        if args.noisy and step == 2 and r == 0:
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order.", UserWarning)
            say(f"[{host}] WARNING grad norm is inf at step {step}, skipping update (loss scale 65536 -> 32768)")
        step += 1
    if bar is not None:
        bar.close()
    dist.barrier()
    say(f"[{host}] rank {r} done, {step} steps in {time.time()-t0:.1f}s")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
