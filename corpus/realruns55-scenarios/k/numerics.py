import argparse, json, math, os, sys, time, warnings, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--fmt", default="hf")
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=30030)
p.add_argument("--uselog", type=int, default=0)
p.add_argument("--amp", default="")
p.add_argument("--warn", type=int, default=0)
args = p.parse_args()

def fmtline(step, total, m):
    f = args.fmt
    if f == "hf":
        return str({k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()})
    if f == "lightning":
        post = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in m.items())
        return f"Epoch 0: {100*step//total:3d}%|{'#'*(10*step//total):<10}| {step}/{total} [00:0{step%10}<00:0{(total-step)%10}, 9.87it/s, {post}]"
    if f == "megatron":
        return (f" iteration {step:8d}/{total:8d} | consumed samples: {step*32:10d} | elapsed time per iteration (ms): {123.4+step%7:.1f} | "
                f"learning rate: {m.get('learning_rate', 0):.6E} | lm loss: {m['loss']:.6E} | grad norm: {m.get('grad_norm', 0):.3f} | "
                f"loss scale: {m.get('loss_scale', 1.0):.1f} | number of skipped iterations: {m.get('skipped', 0):3d} | number of nan iterations: {m.get('nan_iters', 0):3d} |")
    if f == "kv":
        return " | ".join([f"step {step}"] + [f"{k} {v:.5g}" if isinstance(v, float) else f"{k} {v}" for k, v in m.items()]) + " |"
    if f == "json":
        return json.dumps(dict(step=step, **{k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in m.items()}))
    return repr(m)

def main(rank=None, world=None):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    if args.uselog:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    def out(s):
        if args.uselog: log.info(s)
        else: print(s, flush=True)
    torch.manual_seed(0)
    if args.warn:
        legacy_scaler = torch.cuda.amp.GradScaler()  # leftover from the GPU config
        warnings.warn("This DataLoader will create 8 worker processes in total. Our suggested max number of worker in current system is 2, which is smaller than what this DataLoader is going to create.", UserWarning)
    dim = 16
    model = nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))
    if args.fault == "scaler_fp16":
        model = model.half()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt_lr = args.lr
    opt = torch.optim.AdamW(model.parameters(), lr=opt_lr) if args.fault != "gradexp" else torch.optim.SGD(model.parameters(), lr=opt_lr)
    if args.fault == "lr_zero":
        # bug: warmup lambda uses integer division -> factor 0 for every step < total
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) // args.steps + 0 * 1)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    scaler = None
    if args.fault in ("scaler_fp16", "scale_underflow") or args.amp == "fp16":
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**(24 if args.fault == "none" else 16), growth_interval=20)
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
    g = torch.Generator().manual_seed(1234 + rank * (1 if args.fault != "desync_seed" else 0))
    W = torch.randn(dim, 1, generator=torch.Generator().manual_seed(7))
    if rank == 0:
        out(f"***** Running training *****\n  Num examples = {args.steps*32*world}\n  Num Epochs = 1\n  Instantaneous batch size per device = 32\n  World size = {world}\n  Total optimization steps = {args.steps}")
    skipped = 0; nan_iters = 0
    t0 = time.time()
    for step in range(1, args.steps + 1):
        ts = time.time()
        x = torch.randn(32, dim, generator=g)
        y = x @ W + 0.3 * torch.randn(32, 1, generator=g)
        if args.fault == "desync_label" and rank == args.rank:
            # bug: this rank's shard read with an old preprocessing config: targets in different units (x100)
            y = y * 100.0
        if args.fault == "nan_norm" and (rank == args.rank or args.rank < 0) and step >= args.step:
            # a shard whose feature column 3 is constant -> std 0 -> per-batch standardisation divides by zero
            x[:, 3] = 5.0
        if args.fault in ("nan_norm",):
            x = (x - x.mean(0)) / x.std(0)
        if args.fault == "straggler" and rank == args.rank:
            time.sleep(0.25)  # slow data path on this rank (e.g. network fs)
        data_time = time.time() - ts
        if args.fault == "spike" and step == args.step:
            # config bug: warmup schedule replaced by constant peak lr 100x too large on resume
            for pg in opt.param_groups: pg["lr"] = args.lr * 300
            sched = None
        if args.fault == "gradexp" and step == args.step and (rank == args.rank or args.rank < 0):
            x = x * 1e3  # unnormalised batch (raw pixel-scale features) slips through
        if args.fault == "fp16_mask":
            scores = (x @ x.T).half()
            mask = torch.triu(torch.ones(32, 32, dtype=torch.bool), 1)
            if step >= args.step:
                scores = scores.masked_fill(mask, -1e9)
        ctx = torch.autocast("cpu", dtype=torch.float16) if (args.amp == "fp16" or args.fault == "scale_underflow") else (torch.autocast("cpu", dtype=torch.bfloat16) if args.amp == "bf16" else torch.autocast("cpu", enabled=False))
        with ctx:
            if args.fault == "scaler_fp16":
                x = x.half(); y = y.half()
            pred = model(x)
            loss = F.mse_loss(pred.float(), y.float()) if args.fault != "anomaly" else None
            if args.fault == "scale_underflow" and step >= args.step:
                # "smoothness" regulariser with a huge frequency: tiny value, gradients beyond fp16 range
                loss = loss + 1e-3 * torch.sin(1e16 * pred.float()).mean()
            if args.fault == "anomaly":
                err = (pred.float() - y.float())
                if step >= args.step and rank == args.rank:
                    err = err - err  # residual exactly zero (target leak) -> sqrt(0) grad
                loss = torch.sqrt((err ** 2).mean(1)).mean()
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            old = scaler.get_scale()
            scaler.step(opt); scaler.update()
            if scaler.get_scale() < old:
                skipped += 1
                out(f"[rank{rank}] Gradient overflow. Skipping step, loss scale reduced from {old} to {scaler.get_scale()}") if args.fault in ("scale_underflow", "none") else None
        else:
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9, error_if_nonfinite=(args.fault == "gradexp"))
            opt.step()
        if sched is not None: sched.step()
        lv = loss.item()
        if not math.isfinite(lv): nan_iters += 1
        if args.fault == "multinomial" and step % 20 == 0:
            logits = model(torch.randn(4, dim, generator=g)).repeat(1, 8) * torch.linspace(-1, 1, 8)
            temp = 0.0 if step >= args.step else 0.7  # eval config: temperature 0 meant greedy but sampler divides
            probs = torch.softmax(logits / temp, dim=-1)
            s = torch.multinomial(probs, 1)
            out(f"[rank{rank}] sample ids at step {step}: {s.view(-1).tolist()}")
        if args.fault == "collective_uneven" and rank == args.rank and step == args.step:
            out(f"[rank{rank}] data shard exhausted after {step} batches")
            break
        if step % 2 == 0 or args.fmt in ("megatron",):
            m = {"loss": lv, "grad_norm": float(gn), "learning_rate": opt.param_groups[0]["lr"], "epoch": round(step / args.steps, 2)}
            if scaler is not None: m["loss_scale"] = scaler.get_scale()
            if args.fmt == "megatron": m["skipped"] = skipped; m["nan_iters"] = nan_iters
            if args.fault == "straggler": m["data_time_s"] = round(data_time, 3); m["step_time_s"] = round(time.time() - ts, 3)
            if world > 1 and args.fault in ("desync_label", "straggler", "desync_seed", "nan_norm", "gradexp"):
                out(f"[rank{rank}] " + fmtline(step, args.steps, m))
            elif rank == 0:
                out(fmtline(step, args.steps, m))
    if distributed:
        dist.barrier()
    if rank == 0:
        out(str({"train_runtime": round(time.time() - t0, 3), "train_samples_per_second": round(args.steps*32*world/(time.time()-t0), 2), "train_loss": lv, "epoch": 1.0}))
    if distributed:
        dist.destroy_process_group()

def _spawn_entry(r, w):
    main(r, w)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
