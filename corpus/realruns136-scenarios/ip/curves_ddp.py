"""Tiny next-token LM trained with DDP (gloo, CPU); prints metric lines in several trainer styles.

--fault selects a real bug / misconfiguration:
  none          healthy run (noisy, with warnings)
  pad-shard     rank --bad-rank's shard ends in empty (all-pad) documents; loss is sum/num_tokens -> 0/0
  weight-cast   per-sample weights stored as float64 in the shard; one huge weight on --bad-rank overflows float32
  warmup-peak   linear warm-up to a peak LR that is far too high; diverges once warm-up ends
  spike-shard   --bad-rank gets a shard whose targets were written with a shifted vocab (corrupt), spikes
  zero-grad-order   optimizer.zero_grad() placed between backward() and step(): nothing trains
  stale-optim   optimizer built, then model re-initialised from config: optimizer updates orphan params
  label-leak    target token is also fed as an input feature: loss collapses to ~0
  slow-shard    --bad-rank's dataset re-tokenises from a gzip file per sample after --bad-step
  fp16-overflow autocast fp16 + GradScaler, logits scaled by 1/temperature with temperature 1e-3
"""
import argparse, datetime, gzip, io, json, logging, math, os, sys, time, warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--fmt", default="kv", choices=["kv", "pipe", "megatron", "json", "tqdm", "logging"])
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--warmup", type=int, default=20)
p.add_argument("--launch", default="env", choices=["env", "spawn", "single"])
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=46560)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--every", type=int, default=1)
args = p.parse_args()

V, D, T, B = 64, 48, 32, 16


def make_chain(seed):
    g = torch.Generator().manual_seed(1234 + seed)
    logits = torch.randn(V, V, generator=g) * 2.5
    return torch.softmax(logits, -1)


class ShardDataset(torch.utils.data.Dataset):
    def __init__(self, rank, world, n=4000):
        self.rank, self.world = rank, world
        chain = make_chain(0)
        g = torch.Generator().manual_seed(rank)
        seqs = torch.empty(n, T + 1, dtype=torch.long)
        seqs[:, 0] = torch.randint(1, V, (n,), generator=g)
        for t in range(T):
            seqs[:, t + 1] = torch.multinomial(chain[seqs[:, t]], 1, generator=g).squeeze(1)
        seqs[seqs == 0] = 1  # 0 is the pad id
        self.seqs = seqs
        self.weights = torch.ones(n, dtype=torch.float64)
        self.slow_from = None
        if args.fault == "pad-shard" and rank == args.bad_rank:
            # tail of this shard: documents that came out empty after filtering -> all pad
            s = args.bad_step * B
            self.seqs[s:s + B] = 0
        if args.fault == "weight-cast" and rank == args.bad_rank:
            # weights computed as 1/frequency in float64; a near-zero frequency gives a huge weight
            self.weights[args.bad_step * B + 3] = 1.0 / 2.0e-40
        if args.fault == "spike-shard" and rank == args.bad_rank:
            s, e = args.bad_step * B, (args.bad_step + 6) * B
            self.seqs[s:e, 1:] = (self.seqs[s:e, 1:] + 17) % (V - 1) + 1
        if args.fault == "slow-shard" and rank == args.bad_rank:
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb") as f:
                f.write(json.dumps(self.seqs.tolist()).encode())
            self.gz = buf.getvalue()
            self.slow_from = args.bad_step * B

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        if self.slow_from is not None and i >= self.slow_from:
            # cache miss: re-read and re-tokenise the whole compressed shard for each sample
            data = json.loads(gzip.decompress(self.gz).decode())
            x = torch.tensor(data[i])
        else:
            x = self.seqs[i]
        return x, self.weights[i].float()


class TinyLM(nn.Module):
    def __init__(self, leak=False):
        super().__init__()
        self.emb = nn.Embedding(V, D, padding_idx=0)
        self.leak = nn.Embedding(V, D) if leak else None
        self.mix = nn.Linear(2 * D, D)
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V)
        self.temperature = 1.0

    def forward(self, x, y=None):
        h = self.emb(x)
        prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
        h = self.mix(torch.cat([h, prev], -1))
        if self.leak is not None:
            h = h + self.leak(y)
        h = h + self.ff(self.ln(h))
        return self.head(self.ln(h)) / self.temperature


def fmt_line(rank, it, loss, lr, gnorm, tps, extra):
    if args.fmt == "megatron":
        s = (f" iteration {it:8d}/{args.steps:8d} | consumed samples: {it * B * WORLD:10d} | "
             f"elapsed time per iteration (ms): {extra['ms']:.1f} | learning rate: {lr:.6E} | "
             f"global batch size: {B * WORLD:5d} | lm loss: {loss:.6E} | ")
        if "scale" in extra:
            s += f"loss scale: {extra['scale']:.1f} | "
        s += f"grad norm: {gnorm:.3f} | number of skipped iterations: {extra.get('skipped', 0):3d} | number of nan iterations: {extra.get('nans', 0):3d} |"
        return s
    if args.fmt == "pipe":
        return f"[rank{rank}] step: {it} | loss: {loss:.4f} | lr: {lr:.3e} | grad_norm: {gnorm:.4f} | tok/s: {tps:.0f} | data_ms: {extra['data_ms']:.1f}"
    if args.fmt == "json":
        d = {"rank": rank, "step": it, "loss": round(loss, 5) if math.isfinite(loss) else str(loss),
             "lr": lr, "grad_norm": round(gnorm, 4) if math.isfinite(gnorm) else str(gnorm),
             "tokens_per_sec": round(tps, 1), "data_ms": round(extra["data_ms"], 1)}
        d.update({k: v for k, v in extra.items() if k in ("scale", "skipped_nan_batches", "inf_checks")})
        return json.dumps(d)
    return (f"rank={rank} step={it} loss={loss:.4f} lr={lr:.2e} grad_norm={gnorm:.3f} "
            f"tokens_per_s={tps:.0f} data_ms={extra['data_ms']:.1f} step_ms={extra['ms']:.1f}")


def main(rank, world):
    global WORLD
    WORLD = world
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=40))
    log = logging.getLogger("train")
    if args.fmt == "logging":
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    out = (lambda s: log.info(s)) if args.fmt == "logging" else (lambda s: print(s, flush=True))

    model = TinyLM(leak=args.fault == "label-leak")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, betas=(0.9, 0.95))
    if args.fault == "stale-optim":
        # "make sure every rank starts from the same init": rebuild from config after the optimizer exists
        torch.manual_seed(1000)
        model = TinyLM()
    if args.fault == "fp16-overflow":
        model.temperature = 1e-3  # meant as "sharpen" factor, used as divisor
    warm = args.warmup

    def lr_at(step):
        if step < warm:
            return (step + 1) / warm
        prog = (step - warm) / max(1, args.steps - warm)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * prog))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    if rank == 0:
        nparam = sum(p.numel() for p in model.parameters())
        out(f"> building TinyLM: vocab={V} d_model={D} seq_len={T} params={nparam} world_size={world} micro_batch={B}")
        out(f"> optimizer: AdamW lr={args.lr} warmup_steps={warm} decay=cosine clip_grad={args.clip}")
    ds = ShardDataset(rank, world)
    dl = torch.utils.data.DataLoader(ds, batch_size=B, shuffle=False, drop_last=True)
    scaler = None
    if args.fault == "fp16-overflow":
        scaler = torch.amp.GradScaler("cpu", init_scale=65536.0)
    it_dl = iter(dl)
    bar = None
    if args.fmt == "tqdm":
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc=f"rank{rank} train", position=0, dynamic_ncols=False, ncols=110,
                   mininterval=0, file=sys.stderr)
    skipped = nans = 0
    t_last = time.time()
    for step in range(1, args.steps + 1):
        t0 = time.time()
        x, w = next(it_dl)
        data_ms = (time.time() - t0) * 1000
        inp, tgt = x[:, :-1], x[:, 1:]
        if scaler is not None:
            with torch.autocast("cpu", dtype=torch.float16):
                logits = ddp(inp, tgt)
                tok = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), reduction="none",
                                      ignore_index=0).view(B, T)
            loss = tok.float().sum() / B  # per-sequence sum, as in the reference implementation
        else:
            logits = ddp(inp, tgt) if args.fault == "label-leak" else ddp(inp)
            tok = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), reduction="none", ignore_index=0).view(B, T)
            mask = (tgt != 0).float()
            loss = (tok * mask * w[:, None]).sum() / (mask * w[:, None]).sum()
        if args.fault != "zero-grad-order":
            opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
        else:
            loss.backward()
        if args.fault == "zero-grad-order":
            opt.zero_grad(set_to_none=False)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip).item()
        extra = {"data_ms": data_ms}
        if scaler is not None:
            scale_before = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            if scaler.get_scale() < scale_before:
                skipped += 1
            extra["scale"] = scaler.get_scale()
        else:
            opt.step()
        sched.step()
        lval = loss.item()
        if not math.isfinite(lval):
            nans += 1
        extra.update(skipped=skipped, nans=nans)
        ms = (time.time() - t_last) * 1000
        t_last = time.time()
        extra["ms"] = ms
        tps = B * T / (ms / 1000)
        lr = sched.get_last_lr()[0]
        if args.fault == "none" and gnorm > 5 * args.clip and step % 7 == 0 and rank == 0:
            warnings.warn(f"grad norm {gnorm:.2f} clipped to {args.clip}; consider lowering the learning rate")
        if bar is not None:
            bar.set_postfix(loss=f"{lval:.4f}", gnorm=f"{gnorm:.2f}", lr=f"{lr:.2e}")
            bar.update(1)
            if step % 10 == 0:
                bar.write(f"rank{rank} step {step}: loss {lval:.4f} grad_norm {gnorm:.3f} tok/s {tps:.0f}")
        elif step % args.every == 0:
            if args.fmt == "megatron" and rank != world - 1:
                pass
            else:
                out(fmt_line(rank, step, lval, lr, gnorm, tps, extra))
    if bar is not None:
        bar.close()
    if world > 1:
        dist.barrier()
    if rank == 0:
        out(f"training finished after {args.steps} steps; final loss {lval:.4f}")
    if world > 1:
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world)


if __name__ == "__main__":
    if args.launch == "env":
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    elif args.launch == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.world,), nprocs=args.world, join=True)
    else:
        main(0, 1)
