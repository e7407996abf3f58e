"""Tiny DDP training loop with selectable realistic faults (producer cv)."""
import argparse, os, sys, time, math, subprocess, warnings, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, Sampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--logfmt", default="print")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=37260)
p.add_argument("--data", default="/work/rr84/cv/data")
args = p.parse_args()

VOCAB = 100

class ToyDS(Dataset):
    def __init__(self, n=64, seq=16, bad_at=None):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, VOCAB, (n, seq), generator=g)
        self.bad_at = bad_at
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.bad_at is not None and i == self.bad_at:
            x = x.clone(); x[3] = VOCAB + 27   # token id from a newer tokenizer
        return x, x.roll(-1)

class ShardSampler(Sampler):
    """custom strided sampler; pads shards to equal length"""
    def __init__(self, n, rank, world, buggy=False):
        self.n, self.rank, self.world, self.buggy = n, rank, world, buggy
    def __iter__(self):
        per = math.ceil(self.n / self.world)
        idx = list(range(self.rank * per, (self.rank + 1) * per))
        if not self.buggy:
            idx = [i % self.n for i in idx]
        return iter(idx)
    def __len__(self): return math.ceil(self.n / self.world)

class TinyLM(nn.Module):
    def __init__(self, vocab=VOCAB, d=32, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(layers)])
        self.head = nn.Linear(d, vocab)
    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks: h = h + b(h)
        return self.head(h)

def run(rank, world):
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
        log = logging.getLogger("train").info
    else:
        log = lambda m: print(f"[rank{rank}] {m}", flush=True)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=25))
    torch.manual_seed(1234)
    f = args.fault
    mine = (rank == args.rank) or world == 1
    log(f"world_size={world} fault={f} torch={torch.__version__}")

    cfg = dict(global_batch=24, micro_batch=4, grad_accum=2, lr=3e-3, warmup=2)
    if f == "cfg-assert":
        cfg["global_batch"] = 32 if world == 3 else 24
    if f.startswith("cfg"):
        assert cfg["global_batch"] == cfg["micro_batch"] * cfg["grad_accum"] * world, \
            f"global_batch {cfg['global_batch']} != micro_batch*grad_accum*world_size"

    if f == "subprocess" and mine:
        log("collecting environment for run card")
        out = subprocess.run(["git", "-C", "/work/rr84/cv/data", "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True)
        log(f"code version {out.stdout.strip()}")
    if f == "subprocess-prep" and mine:
        log("running data preprocessing")
        subprocess.run([sys.executable, "-c", "import json,sys; json.load(open('/work/rr84/cv/data/shard_manifest.json'))"], check=True)
    if f == "missing-data" and mine:
        torch.load(os.path.join(args.data, f"tokens_rank{rank}.pt"))
    if f == "fdlimit":
        fh = []
        for i in range(200):
            fh.append(open(os.path.join(args.data, f"shard_{i%4}.txt"), "w"))

    model = TinyLM()
    if f == "surgery" and mine:
        # freeze the bottom half of the network for fine-tuning
        for i in range(3):
            for prm in model.get_submodule(f"blocks.{i}").parameters():
                prm.requires_grad_(False)
    if f == "surgery-head":
        model.head = nn.Linear(32, 120)  # new vocab, but tie to embedding
        model.head.weight = model.emb.weight
    if f == "ddp-shape" and mine:
        model.blocks.append(nn.Sequential(nn.Linear(32, 32), nn.GELU()))
    if f == "resume-mismatch":
        sd = torch.load(os.path.join(args.data, "ckpt_v1.pt"))
        model.load_state_dict(sd)
    if f == "ckpt-trunc":
        sd = torch.load(os.path.join(args.data, "ckpt_trunc.pt"))
        model.load_state_dict(sd)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    if f == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg["lr"], total_steps=args.step)
    elif f == "seqlr":
        warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=cfg["warmup"])
        cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[warm, cos], milestones=[cfg["warmup"], args.steps])
    elif f == "plateau":
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg["warmup"]))

    if f == "determinism":
        torch.use_deterministic_algorithms(True)
        log("deterministic mode on (torch.use_deterministic_algorithms(True))")

    ds = ToyDS(bad_at=(10 if f in ("vocab", "worker-vocab") else None))
    sampler = ShardSampler(len(ds) + (6 if f == "sampler" else 0), rank, world, buggy=(f == "sampler" and mine))
    nw = 2 if f in ("worker-vocab", "healthy-workers") else 0
    dl = DataLoader(ds, batch_size=4, sampler=sampler, num_workers=nw)
    lossf = nn.CrossEntropyLoss()
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank} train", mininterval=0, file=sys.stderr)
    step = 0
    for ep in it:
        for bi, (x, y) in enumerate(dl):
            if f == "nan" and mine and step == args.step:
                with torch.no_grad():
                    (model.module if world > 1 else model).head.bias.fill_(float("inf"))
            if f == "determinism" and step == args.step:
                # scatter the per-token loss weights into a flat buffer
                w = torch.zeros(x.numel())
                w.put_(x.flatten().clamp(max=x.numel() - 1), torch.ones(x.numel()))
            out = model(x)
            loss = lossf(out.reshape(-1, VOCAB if f != "surgery-head" else 120), y.reshape(-1))
            if f == "nan" and not torch.isfinite(loss):
                raise FloatingPointError(f"loss is {loss.item()} at step {step}")
            loss.backward()
            if f == "collective" and mine and step == args.step:
                dist.all_reduce(torch.ones(7))
            elif f == "collective" and step == args.step:
                dist.all_reduce(torch.ones(5))
            if f == "straggle" and mine and step == args.step:
                log("syncing eval stats"); time.sleep(60)
            if f == "sigkill" and mine and step == args.step:
                os.kill(os.getpid(), 9)
            if f == "healthy-warn" and step == 0:
                sched.step()  # scheduler stepped early on first iteration (emits torch UserWarning)
            opt.step(); opt.zero_grad()
            if f == "plateau":
                sched.step()
            else:
                sched.step()
            if step % 2 == 0:
                log(f"ep {ep} step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}")
            step += 1
            if step >= 6: break
        # eval
        correct, total = 0, 0
        eval_n = 0 if (f == "metric" and mine and ep == 1) else 8
        with torch.no_grad():
            for x, y in list(dl)[:eval_n // 4]:
                pred = model(x).argmax(-1)
                correct += (pred == y).sum().item(); total += y.numel()
        acc = correct / total
        log(f"eval ep {ep} token_acc {acc:.4f}")
        if step >= args.steps: break
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    log("training finished")

def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
