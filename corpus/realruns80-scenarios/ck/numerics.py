"""Numerical-failure family: a small classifier trained with DDP/gloo on synthetic data.
--fault selects the real bug that is triggered at --step on --rank."""
import argparse, os, sys, time, math, logging, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, cleanup

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--style", default="print")   # print | logging | megatron
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--spawn", type=int, default=0)
args = p.parse_args()

class Net(nn.Module):
    def __init__(s, d=32, h=64, c=4):
        super().__init__()
        s.fc1 = nn.Linear(d, h); s.fc2 = nn.Linear(h, h); s.out = nn.Linear(h, c)
    def forward(s, x):
        return s.out(F.gelu(s.fc2(F.gelu(s.fc1(x)))))

class Scorer(nn.Module):  # tiny attention block used by the half-precision path
    def __init__(s, d=32):
        super().__init__()
        s.q = nn.Linear(d, d); s.k = nn.Linear(d, d); s.v = nn.Linear(d, d); s.o = nn.Linear(d, 4)
    def forward(s, x, pad_mask):
        q, k, v = s.q(x), s.k(x), s.v(x)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(pad_mask[:, None, :], -1e9)
        return s.o((scores.softmax(-1) @ v).mean(1))

def main(rank, world):
    log = logging.getLogger("train")
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO,
            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    def out(msg):
        if args.style == "logging": log.info(msg)
        else: print(msg, flush=True)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1234 + rank)
    W = torch.randn(32, 4, generator=torch.Generator().manual_seed(7))
    if args.fault == "halfmask":
        model = Scorer().half()
    else:
        model = Net()
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    lr = 3e-3
    opt = torch.optim.AdamW(ddp.parameters(), lr=lr, weight_decay=0.01)
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for debugging.")
    if rank == 0:
        out(f"world_size={world} params={sum(p.numel() for p in model.parameters())} lr={lr}")
    t0 = time.time()
    for step in range(1, args.steps + 1):
        bad = (step == args.step and (rank == args.rank or world == 1))
        x = torch.randn(16, 32, generator=g)
        y = (x @ W).argmax(-1)
        if args.fault == "logzero":
            # binary "is class 0" head with a hand-written BCE; a shard whose features were
            # not standardised (raw units) arrives on this rank
            if bad or (step > args.step and rank == args.rank):
                x = x * 2.5e3
            logits = ddp(x)[:, 0]
            p_ = torch.sigmoid(logits)
            t = (y == 0).float()
            loss = -(t * torch.log(p_) + (1 - t) * torch.log(1 - p_)).mean()
        elif args.fault == "emptybatch":
            # token-level loss averaged over non-padding positions; a batch of empty documents
            lengths = torch.randint(1, 16, (16,), generator=g)
            if bad: lengths = torch.zeros(16, dtype=torch.long)
            mask = (torch.arange(16)[None, :] < lengths[:, None]).float()  # (16 docs,16 toks)
            logits = ddp(x)
            tok_loss = F.cross_entropy(logits, y, reduction="none")[:, None].expand(16, 16)
            loss = (tok_loss * mask).sum() / mask.sum()
        elif args.fault == "fp16":
            if bad or (step > args.step and rank == args.rank):
                x = x * 6e4   # un-normalised sensor values from one shard
            with torch.autocast("cpu", dtype=torch.float16):
                logits = ddp(x)
            loss = F.cross_entropy(logits.float(), y)
        elif args.fault == "anomaly":
            # siamese embedding distance; duplicate pairs appear on this rank's shard
            x2 = torch.randn(16, 32, generator=g)
            if bad: x2 = x.clone()
            e1, e2 = ddp(x), ddp(x2)
            dist_ = torch.sqrt(((e1 - e2) ** 2).sum(-1))
            same = (y == (x2 @ W).argmax(-1)).float()
            loss = (same * dist_ ** 2 + (1 - same) * F.relu(1.0 - dist_) ** 2).mean() + F.cross_entropy(e1, y)
        elif args.fault == "halfmask":
            seq = x.view(16, 1, 32).expand(16, 8, 32).contiguous().half()
            pad = torch.zeros(16, 8, dtype=torch.bool); pad[:, 6:] = True
            logits = ddp(seq, pad)
            loss = F.cross_entropy(logits.float(), y)
        elif args.fault == "detach":
            logits = ddp(x)
            with torch.no_grad():
                acc = (logits.argmax(-1) == y).float().mean()
                loss = F.cross_entropy(logits, y)
        else:
            if args.fault == "skipnonfinite" and bad:
                x[3, 5] = float("inf")  # a corrupted record with an overflowed feature
            logits = ddp(x)
            loss = F.cross_entropy(logits, y) + 0.3 * torch.rand((), generator=g)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        if args.fault == "skipnonfinite":
            flag = torch.tensor([0.0 if torch.isfinite(gn) else 1.0])
            if world > 1: dist.all_reduce(flag)
            if flag.item() > 0:
                msg = f"WARNING step {step}: non-finite gradient norm ({gn.item()}) on at least one rank, skipping optimizer step"
                out(msg); opt.zero_grad(set_to_none=True); continue
        opt.step()
        if step % args.log_every == 0 or step == args.step:
            lv = loss.detach().clone()
            if world > 1:
                dist.all_reduce(lv); lv /= world
            if rank == 0 or args.style == "logging":
                if args.style == "megatron":
                    el = (time.time() - t0) * 1000 / step
                    out(f" iteration {step:8d}/{args.steps:8d} | consumed samples: {step*16*world:10d} | elapsed time per iteration (ms): {el:.1f} | learning rate: {lr:.3E} | global batch size: {16*world:5d} | lm loss: {lv.item():.6E} | grad norm: {gn.item():.3f} | number of skipped iterations: 0 | number of nan iterations: {int(not torch.isfinite(lv))} |")
                elif args.style == "logging":
                    out(f"step {step} local_loss {loss.item():.4f} avg_loss {lv.item():.4f} grad_norm {gn.item():.4f}")
                else:
                    out(f"step {step} loss {lv.item():.4f} grad_norm {gn.item():.4f}")
    if args.fault == "multinomial":
        # sample a few "predictions" with a temperature from the eval config
        temperature = float(os.environ.get("SAMPLE_TEMPERATURE", "0"))
        with torch.no_grad():
            logits = model(torch.randn(4, 32, generator=g))
            probs = F.softmax(logits / temperature, dim=-1)
            picks = torch.multinomial(probs, 1)
        out(f"rank {rank} sampled {picks.view(-1).tolist()}")
    if rank == 0: out("training finished")
    cleanup()

def _spawn_entry(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "36510"),
                      RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    r, w = setup(30)
    main(r, w)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        r, w = setup(30)
        main(r, w)
