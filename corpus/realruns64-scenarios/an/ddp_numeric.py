"""Tiny causal LM trained with DDP (gloo/CPU). Flags select a numerical fault, the rank and step."""
import argparse, math, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--style", default="plain")  # plain|megatron|tqdm|logging|hf
p.add_argument("--launcher", default="env")  # env|spawn|single
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=30851)
p.add_argument("--amp", default="none")  # none|fp16|bf16
p.add_argument("--scaler", action="store_true")
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--nan-check", action="store_true")
p.add_argument("--min-scale", type=float, default=0.0)
p.add_argument("--clip-nonfinite", action="store_true")
p.add_argument("--init-scale", type=float, default=2.0**16)
args = p.parse_args()

V, T, D, B = 64, 16, 48, 8

class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.qkv, s.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.fc1, s.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
    def forward(s, x, mask):
        q, k, v = s.qkv(s.ln1(x)).chunk(3, -1)
        att = q @ k.transpose(-1, -2)
        if args.fault != "noscale_attn":
            att = att / math.sqrt(D)
        att = att.masked_fill(mask, -1e9 if args.fault == "maskfill_fp16" else float("-inf"))
        x = x + s.proj(att.softmax(-1) @ v)
        return x + s.fc2(F.gelu(s.fc1(s.ln2(x))))

class TinyLM(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb, s.pos = nn.Embedding(V, D), nn.Parameter(torch.zeros(T, D))
        s.feat = nn.Linear(4, D)  # side features per sequence (e.g. length/quality metadata)
        if args.fault == "l2_aux":
            s.meta = nn.Linear(4, 8, bias=False)  # metadata embedding for the auxiliary norm penalty
        s.blocks = nn.ModuleList([Block() for _ in range(2)])
        s.ln, s.head = nn.LayerNorm(D), nn.Linear(D, V)
    def forward(s, x, feats):
        h = s.emb(x) + s.pos
        f = feats
        if args.fault == "divnorm":
            f = feats / feats.norm(dim=-1, keepdim=True)  # unit-normalise metadata vector
        h = h + s.feat(f).unsqueeze(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        for b in s.blocks:
            h = b(h, mask)
        out = s.head(s.ln(h))
        if args.fault == "l2_aux":
            s.aux = torch.sqrt((s.meta(feats) ** 2).sum(-1)).mean()  # L2 norm of metadata embedding
        return out

def make_batch(step, rank):
    g = torch.Generator().manual_seed(1000 * rank + step)
    start = torch.randint(0, V, (B, 1), generator=g)
    stride = torch.randint(1, 4, (B, 1), generator=g)
    x = (start + stride * torch.arange(T + 1)) % V
    noise = torch.rand(B, T + 1, generator=g) < 0.1
    x = torch.where(noise, torch.randint(0, V, (B, T + 1), generator=g), x)
    feats = torch.rand(B, 4, generator=g) + 0.5
    hit = rank == args.fault_rank and step == args.fault_step
    if args.fault == "divnorm" and hit:
        feats[3] = 0.0  # record with missing metadata -> all-zero vector
    if args.fault == "badsample" and hit:
        feats[5, 2] = float("nan")  # 'nan' parsed from a CSV field
    if args.fault in ("fp16_overflow", "log0") and hit:
        feats = feats * 1.0e6  # un-normalised raw feature values (byte counts)
    if args.fault == "l2_aux" and rank == args.fault_rank and step >= args.fault_step:
        feats[step % B] = 0.0  # from this shard on, records with missing metadata
    if args.fault == "lr_rank" and rank == args.fault_rank:
        pass
    return x[:, :-1], x[:, 1:], feats

def log0(msg):
    print(msg, flush=True)

def main(rank, world):
    if args.launcher == "spawn":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
    distributed = args.launcher != "single"
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s", stream=sys.stdout, force=True)
    log = logging.getLogger("train")
    say = (lambda m: log.info(m)) if args.style == "logging" else (lambda m: print(m, flush=True))
    torch.manual_seed(0)
    model = TinyLM()
    if args.fault == "fp16_params":
        model = model.half()
    if distributed:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale) if args.scaler else None
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.amp)
    if args.detect_anomaly:
        torch.autograd.set_detect_anomaly(True)
    if rank == 0:
        n = sum(p.numel() for p in model.parameters())
        say(f"> model: TinyLM layers=2 hidden={D} vocab={V} params={n}")
        say(f"> world_size={world} micro_batch={B} grad_accum={args.grad_accum} lr={args.lr} amp={args.amp} scaler={bool(scaler)}")
    bar = None
    if args.style == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="Epoch 0", dynamic_ncols=False, ncols=100)
    t0 = time.time()
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        for micro in range(args.grad_accum):
            x, y, feats = make_batch(step * args.grad_accum + micro if args.grad_accum > 1 else step, rank)
            if args.fault == "fp16_params":
                feats = feats.half()
            with torch.autocast("cpu", dtype=amp_dtype, enabled=amp_dtype is not None):
                logits = model(x, feats)
                if args.fault == "log0":
                    probs = logits.float().softmax(-1)
                    loss = -torch.log(probs.gather(-1, y.unsqueeze(-1))).mean()
                else:
                    loss = F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))
                if args.fault == "l2_aux":
                    loss = loss + 1e-3 * (model.module if distributed else model).aux
            loss = loss / args.grad_accum
            if args.nan_check and not torch.isfinite(loss).item():
                # same guard as Megatron's check_for_nan_in_loss_and_grad
                raise RuntimeError(f"Rank {rank}: found {loss.item()} in local loss before data-parallel communication collective, "
                                   f"iteration {step}, node {os.uname()[1]}")
            if scaler:
                scaler.scale(loss).backward()
                if args.fault == "unscale_twice" or args.clip:
                    scaler.unscale_(opt)  # unscale before clipping
            else:
                loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip if args.clip else 1e9, error_if_nonfinite=args.clip_nonfinite)
        if scaler:
            scaler.step(opt); scaler.update()
            if args.min_scale and scaler.get_scale() < args.min_scale:
                # fairseq DynamicLossScaler behaviour
                raise FloatingPointError(f"Minimum loss scale reached ({args.min_scale}). Your loss is probably exploding. "
                                         "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
        else:
            opt.step()
        sched.step()
        lval = loss.detach() * args.grad_accum
        if distributed:
            red = lval.clone(); dist.all_reduce(red); red /= world
        else:
            red = lval
        lr = sched.get_last_lr()[0]
        if args.fault == "sample_t0" and step == args.fault_step and rank == 0:
            # periodic greedy-ish sample for the log; temperature from config
            temperature = 0.0
            with torch.no_grad():
                ctx = x[:1]
                lg = model(ctx, feats[:1])[:, -1, :] / temperature
                nxt = torch.multinomial(lg.softmax(-1), 1)
            say(f"sample: {nxt.tolist()}")
        if step % args.log_every == 0 or step == args.steps - 1:
            el = (time.time() - t0) * 1000 / (step + 1)
            if args.style == "megatron":
                if rank == 0:
                    extra = f" loss scale: {scaler.get_scale():.1f} |" if scaler else " loss scale: 1.0 |"
                    say(f" iteration {step+1:8d}/{args.steps:8d} | consumed samples: {(step+1)*B*world:10d} | elapsed time per iteration (ms): {el:.1f} | learning rate: {lr:.6E} | global batch size: {B*world:5d} | lm loss: {red.item():.6E} |{extra} grad norm: {gn.item():.3f} | number of skipped iterations: 0 | number of nan iterations: {int(not math.isfinite(red.item()))} |")
            elif args.style == "hf":
                if rank == 0:
                    say(str({"loss": round(red.item(), 4), "grad_norm": round(gn.item(), 4), "learning_rate": lr, "epoch": round((step + 1) / args.steps * 3, 2)}))
            elif args.style == "tqdm":
                if bar is not None:
                    bar.set_postfix(loss=f"{red.item():.3f}", grad_norm=f"{gn.item():.2f}", lr=f"{lr:.1e}")
            else:
                extra = f" | scale {scaler.get_scale():.1f}" if scaler else ""
                say(f"[rank{rank}] step {step} | loss {lval.item():.4f} | avg_loss {red.item():.4f} | grad_norm {gn.item():.4f} | lr {lr:.2e}{extra}")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if rank == 0:
        say(f"training finished: {args.steps} steps in {time.time()-t0:.1f}s, final loss {red.item():.4f}")
    if distributed:
        dist.destroy_process_group()

if __name__ == "__main__":
    if args.launcher == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.world,), nprocs=args.world, join=True)
    elif args.launcher == "single":
        main(0, 1)
    else:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
