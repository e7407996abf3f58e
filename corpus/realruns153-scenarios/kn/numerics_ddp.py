"""Tiny DDP training loop on synthetic tabular/sequence data with selectable numerical faults."""
import argparse, os, sys, math, time, logging, csv, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--optim", default="sgd")
p.add_argument("--style", default="plain")  # plain | logging | tqdm
p.add_argument("--data-dir", default="data")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=48900)
p.add_argument("--nan-guard", type=int, default=0)
p.add_argument("--anomaly", type=int, default=0)
args = p.parse_args()

class Net(nn.Module):
    def __init__(s, d=16, h=32, c=5, attn=False):
        super().__init__()
        s.fc1 = nn.Linear(d, h); s.fc2 = nn.Linear(h, h); s.head = nn.Linear(h, c)
        s.use_attn = attn
        if attn:
            s.emb = nn.Embedding(50, 16); s.attn_q = nn.Linear(16, 16); s.attn_k = nn.Linear(16, 16)
    def forward(s, x, tok=None, pad=None):
        h = torch.relu(s.fc1(x)); h = torch.relu(s.fc2(h))
        if s.use_attn:
            h = h + s.attend(tok, pad).mean(1).repeat(1, 2)
        return s.head(h), h
    def attend(s, tok, pad):
        e = s.emb(tok); q = s.attn_q(e); k = s.attn_k(e)
        sc = q @ k.transpose(-1, -2) / 4.0
        sc = sc.masked_fill(pad[:, None, :], -1e9)
        return torch.softmax(sc, -1) @ e

def load_shard(rank, world):
    # each rank reads its own shard of a small CSV file
    path = os.path.join(args.data_dir, f"shard{rank}.csv")
    rows = []
    with open(path) as f:
        for r in csv.reader(f):
            rows.append([float(v) for v in r])
    t = torch.tensor(rows)
    return t[:, :-1], t[:, -1].long()

def make_data(world):
    os.makedirs(args.data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    W = torch.randn(16, 5, generator=g)
    for r in range(world):
        X = torch.randn(256, 16, generator=g); y = (X @ W).argmax(1)
        with open(os.path.join(args.data_dir, f"shard{r}.csv"), "w") as f:
            w = csv.writer(f)
            for i in range(256):
                vals = [f"{v:.5f}" for v in X[i].tolist()]
                if args.fault == "corrupt" and r == args.bad_rank and i == args.bad_step * 16 + 3:
                    vals[7] = "nan"   # a missing value exported as 'nan' by the upstream pandas dump
                if args.fault == "log0" and r == args.bad_rank and i == args.bad_step * 16 + 5:
                    vals = [f"{v*4000:.2f}" for v in X[i].tolist()]  # row written in raw (unnormalised) units
                w.writerow(vals + [int(y[i])])

def main(rank=None, world=None):
    if rank is None:
        rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    else:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = (lambda m: log.info(m)) if args.style == "logging" else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    if rank == 0:
        make_data(world)
    if distributed: dist.barrier()
    X, Y = load_shard(rank, world)
    torch.manual_seed(0)
    model = Net(attn=args.fault == 'fp16const')
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    m = DDP(model) if distributed else model
    opt = torch.optim.SGD(m.parameters(), lr=args.lr, momentum=0.9) if args.optim == "sgd" else torch.optim.Adam(m.parameters(), lr=args.lr)
    say(f"world={world} params={sum(p.numel() for p in model.parameters())} lr={args.lr} optim={args.optim} samples={len(X)}")
    it = range(args.steps)
    if args.style == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", ncols=90)
    bs = 16
    for step in it:
        xb = X[step * bs % len(X):][:bs]; yb = Y[step * bs % len(Y):][:bs]
        if args.fault == "log0":
            # hand-rolled CE with label smoothing: log of softmax probabilities
            logits, _ = m(xb)
            p_ = torch.softmax(logits, -1)
            tgt = F.one_hot(yb, 5).float() * 0.9 + 0.02
            loss = -(tgt * torch.log(p_)).sum(-1).mean()
        elif args.fault == "emptymask":
            tok = torch.randint(1, 50, (bs, 12), generator=torch.Generator().manual_seed(step * 10 + rank))
            lengths = torch.randint(3, 12, (bs,), generator=torch.Generator().manual_seed(step + 100 * rank))
            if rank == args.bad_rank and step == args.bad_step:
                lengths[:] = 0  # every sequence in this batch was truncated to nothing by the length filter
            pad = torch.arange(12)[None, :] >= lengths[:, None]
            mask = (~pad).float()
            logits, _ = m(xb)
            tok_loss = ((logits.mean(-1, keepdim=True) - tok.float() / 50) ** 2)
            loss = (tok_loss * mask).sum() / mask.sum() + F.cross_entropy(logits, yb) * 0.1
        elif args.fault == "anomaly":
            logits, h = m(xb)
            if rank == args.bad_rank and step == args.bad_step:
                xb2 = xb.clone(); xb2[1] = xb2[0]   # duplicated record in the shard: pair distance exactly 0
                _, h = m(xb2)
            d = torch.sqrt(((h[1:] - h[:-1]) ** 2).sum(-1))  # consecutive-pair embedding distance
            loss = F.cross_entropy(logits, yb) + 0.01 * torch.relu(1.0 - d).mean()
        elif args.fault == "cholesky":
            logits, h = m(xb)
            if rank == args.bad_rank and step == args.bad_step:
                xb, yb = X[-1:], Y[-1:]   # tail of the shard: a batch of one sample
                logits, h = m(xb)
            n = len(xb)
            hb = logits
            cov = (hb - hb.mean(0)).T @ (hb - hb.mean(0)) / max(n - 1, 1)
            Lc = torch.linalg.cholesky(cov)  # whitening regulariser
            loss = F.cross_entropy(logits, yb) + 1e-3 * torch.log(torch.diagonal(Lc)).sum()
        elif args.fault == "fp16const":
            tok = torch.randint(1, 50, (bs, 12)); pad = torch.zeros(bs, 12, dtype=torch.bool); pad[:, 10:] = True
            logits, _ = m(xb, tok, pad)
            loss = F.cross_entropy(logits, yb)
        else:
            logits, _ = m(xb)
            loss = F.cross_entropy(logits, yb)
            if args.fault == "spike":
                loss = loss + 0.0 * logits.sum()
        if args.nan_guard == 2 and not torch.isfinite(loss):
            warnings.warn(f"step {step}: loss is {loss.item()}, skipping this batch (no backward/optimizer step)")
            continue
        if args.nan_guard == 1 and not torch.isfinite(loss):
            say(f"step {step}: non-finite loss {loss.item()} ; aborting")
            raise FloatingPointError(f"Loss is {loss.item()} at step {step} on rank {rank}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(m.parameters(), 1e9)
        opt.step()
        if args.style != "tqdm" or rank != 0:
            say(f"step {step:3d} loss {loss.item():.4f} grad_norm {gn.item():.4f}")
        else:
            it.set_postfix(loss=f"{loss.item():.4f}")
        if args.fault == "multinomial" and rank == args.bad_rank and step == args.bad_step:
            # periodic sample of predictions for the dashboard; greedy requested as temperature 0
            temperature = float(os.environ.get("SAMPLE_TEMPERATURE", "0"))
            with torch.no_grad():
                lg, _ = model(X[:4])
                probs = torch.softmax(lg / temperature, -1)
                s = torch.multinomial(probs, 1)
            say(f"sampled classes {s.flatten().tolist()}")
        if args.fault == "fp16const" and rank == args.bad_rank and step == args.bad_step:
            # quick eval of a half-precision copy of the model on the attention probe
            import copy
            ev = copy.deepcopy(model).half().eval()
            with torch.no_grad():
                tok = torch.randint(1, 50, (4, 12)); pad = torch.zeros(4, 12, dtype=torch.bool); pad[:, 9:] = True
                out, _ = ev(X[:4].half(), tok, pad)
            say(f"eval probe norm {out.float().norm():.3f}")
        time.sleep(0.05)
    if distributed:
        dist.barrier(); dist.destroy_process_group()
    say("training finished")

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
