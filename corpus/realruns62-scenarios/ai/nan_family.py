"""NaN / divergence / loss-scaling scenarios for a tiny MLP classifier trained with DDP on gloo.
--fmt selects the metric line format; --fault selects the bug; --rank/--step where it is triggered."""
import argparse, json, logging, math, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fmt", default="megatron", choices=["megatron", "hf", "bar", "json"])
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--launch", default="env", choices=["env", "spawn", "single"])
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=30610)
p.add_argument("--logging", action="store_true")
p.add_argument("--amp", default="", choices=["", "fp16", "bf16"])
args = p.parse_args()

def main(rank=None, world=None):
    if args.launch == "spawn":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(rank), WORLD_SIZE=str(world))
    distributed = args.launch != "single"
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=25))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    if args.logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s", stream=sys.stdout)
    log = logging.getLogger("train")
    def out(s):
        if args.logging: log.info(s)
        else: print(s, flush=True)

    seed = 1234 + rank if args.fault == "replica-desync" else 1234   # bug: per-rank seed before model init
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 8))
    if args.fault == "bf16-stall":
        model = model.to(torch.bfloat16)
    if distributed and args.fault != "replica-desync":
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=float(os.environ.get("INIT_LOSS_SCALE", 65536)), enabled=(args.amp == "fp16"))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s_: min(1.0, (s_ + 1) / 5))
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
    ref = torch.tensor(model.state_dict()[next(iter(model.state_dict()))])  # keep a copy of the first weight for drift logging
    g = torch.Generator().manual_seed(99 + rank)
    W = torch.randn(16, 8, generator=torch.Generator().manual_seed(7))
    tok_count = torch.zeros((), dtype=torch.float16)  # tokens seen (fp16 accumulator)
    best, since_best = float("inf"), 0
    t0 = time.time()
    if args.fmt == "bar":
        from tqdm import tqdm
        bar = tqdm(range(1, args.steps + 1), desc=f"Epoch 0 [rank {rank}]", file=sys.stdout, ncols=110, mininterval=0, disable=False)
        it = bar
    else:
        it = range(1, args.steps + 1)
    for step in it:
        x = torch.randn(32, 16, generator=g)
        if args.fault == "bf16-stall":  # overfit-one-batch sanity check
            x = torch.randn(32, 16, generator=torch.Generator().manual_seed(5))
        if args.fault == "spike" and rank == args.rank and step == args.step:
            x = x * 40.0  # outlier batch
        y = (x @ W).argmax(-1)
        if args.fault in ("nan-rank", "nan-check") and rank == args.rank and step >= args.step:
            x[:] = x[0]  # degenerate shard: every row identical
        if args.fault in ("nan-rank", "nan-skip", "nan-check"):
            # per-batch feature standardisation
            x = (x - x.mean(0)) / x.std(0)
            if args.fault == "nan-skip" and rank == args.rank and step == args.step:
                x = x * float("nan")
        if args.fault in ("log0", "anomaly") and rank == args.rank and step >= args.step:
            x = x * 1e3   # unnormalised raw-feature batch from the second shard
        if args.fault == "bf16-stall":
            x = x.to(torch.bfloat16)
        ctx = torch.autocast("cpu", dtype=torch.float16 if args.amp == "fp16" else torch.bfloat16, enabled=bool(args.amp))
        with ctx:
            logits = model(x)
            if args.fault == "scale-collapse":
                logits = logits * 1e5  # temperature 1/3e4 applied in fp16
            if args.fault in ("log0", "anomaly"):
                probs = torch.softmax(logits.float(), -1)
                if args.fault == "anomaly":
                    ent = -(probs * torch.log(probs)).sum(-1).mean()   # entropy bonus
                    loss = -torch.log(probs.gather(1, y[:, None])).mean() - 0.01 * ent
                else:
                    loss = -torch.log(probs.gather(1, y[:, None])).mean()
            else:
                loss = F.cross_entropy(logits.float(), y)
        if args.fault == "nan-skip" and not torch.isfinite(loss):
            out(f"[rank{rank}] WARNING: non-finite loss {loss.item()} at step {step}, skipping batch")
            continue
        if args.fault == "nan-check" and not math.isfinite(loss.item()):
            raise RuntimeError(f"Rank {rank}, node {os.uname().nodename}, device cpu, iteration {step}: Unexpected result {loss.item()} "
                               f"(message='found NaN in local forward loss calculation')")
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if args.fault == "replica-desync":
            for prm in model.parameters():
                dist.all_reduce(prm.grad); prm.grad /= world
        scaler.unscale_(opt)
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0 if args.fault == "spike" else 1e9)
        scale_before = scaler.get_scale() if args.amp == "fp16" else 1.0
        scaler.step(opt); scaler.update(); sched.step()
        skipped = args.amp == "fp16" and scaler.get_scale() < scale_before
        if args.fault == "diverge" and step == 1:
            pass
        tok_count += 32 * 64
        lr = opt.param_groups[0]["lr"]
        lv = loss.item()
        el = (time.time() - t0) * 1000 / step
        if args.fmt == "megatron":
            s = (f" [rank{rank}] iteration {step:8d}/{args.steps:8d} | consumed samples: {step*32*world:10d} | elapsed time per iteration (ms): {el:.1f} | "
                 f"learning rate: {lr:.6E} | global batch size: {32*world:5d} | lm loss: {lv:.6E} | loss scale: {scaler.get_scale() if args.amp else 1.0:.1f} | "
                 f"grad norm: {gn.item():.3f} | number of skipped iterations: {int(skipped):3d} | number of nan iterations: {int(not math.isfinite(lv)):3d} |")
            out(s)
            if skipped:
                out(f" [rank{rank}] Gradient overflow. Skipping step, loss scaler reducing loss scale to {scaler.get_scale()}")
        elif args.fmt == "hf":
            d = {"loss": round(lv, 4), "grad_norm": gn.item(), "learning_rate": lr, "epoch": round(step / args.steps, 2)}
            if args.amp == "fp16": d["loss_scale"] = scaler.get_scale()
            if rank == 0 or args.fault not in ("none",): out(str(d))
        elif args.fmt == "json":
            toks = int(tok_count.item()) if args.fault == "fp16-counter" else step * 32 * 64
            out(json.dumps({"step": step, "rank": rank, "loss": lv, "grad_norm": gn.item(), "lr": lr,
                            "tokens": toks, "tok_per_s": round(toks / (time.time() - t0), 1)}))
        else:
            bar.set_postfix(loss=f"{lv:.3f}", grad_norm=f"{gn.item():.2f}", v_num=0, refresh=True)
        if args.fault == "scale-collapse" and scaler.get_scale() < 1e-4:
            raise FloatingPointError(
                f"Minimum loss scale reached ({1e-4}). Your loss is probably exploding. Try lowering the learning rate, using gradient clipping or increasing the batch size.")
        if args.fault == "bf16-stall":
            if lv < best - 1e-6: best, since_best = lv, 0
            else: since_best += 1
            if since_best >= 15:
                raise RuntimeError(f"EarlyStopping: monitored metric train_loss did not improve in the last {since_best} steps. Best score: {best:.6f}. Stopping training.") 
        if args.fault == "replica-desync" and step % 10 == 0:
            h = torch.tensor([float(sum(p_.double().sum() for p_ in model.parameters()))], dtype=torch.float64)
            hs = [torch.zeros_like(h) for _ in range(world)]
            dist.all_gather(hs, h)
            if rank == 0:
                out(f" [rank0] param checksum per DP rank at iteration {step}: {[round(v.item(), 6) for v in hs]}")
            assert all(torch.equal(hs[0], v) for v in hs), f"Parameter hashes not equal across data-parallel replicas at iteration {step}"
        if args.fault == "sample" and step == args.step and rank == 0:
            temperature = float(os.environ.get("SAMPLE_TEMPERATURE", "0"))
            out(f" [rank0] generating 4 validation samples (temperature={temperature})")
            with torch.no_grad():
                lg = model(torch.randn(4, 16, generator=g))
                pr = torch.softmax(lg / temperature, -1)
                smp = torch.multinomial(pr, 1)
            out(f" [rank0] samples: {smp.flatten().tolist()}")
    if args.fmt == "bar": bar.close()
    out(f"[rank{rank}] training finished: {args.steps} iterations, final loss {lv:.4f}")
    if distributed:
        dist.barrier(); time.sleep(0.5); dist.destroy_process_group()

if __name__ == "__main__":
    if args.launch == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.world,), nprocs=args.world, join=True)
    else:
        main()
