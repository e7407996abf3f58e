"""Small DDP (or single-process) training loop used to study OS/process-level failures.

Runs under torchrun (RANK/WORLD_SIZE in env) or as a plain python process.
"""
import argparse, os, sys, time, math, logging, ctypes, warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--features", type=int, default=64)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--samples", type=int, default=4096)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--sharing-strategy", default=None)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--ckpt-every", type=int, default=20)
p.add_argument("--atomic-save", action="store_true", help="save to a temp file then os.rename into place")
p.add_argument("--tmp-dir", default="/tmp")
p.add_argument("--run-tag", default="", help="extra text put into checkpoint file names")
p.add_argument("--save-via-buffer", action="store_true", help="serialize to memory first, then write the bytes (as for remote storage)")
p.add_argument("--metrics-file", default=None)
p.add_argument("--fault", default="none", choices=["none", "segv", "abort", "bigalloc"])
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--item-sleep", type=float, default=0.0)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--logfmt", default="print", choices=["print", "logging"])
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noisy", action="store_true", help="emit a few common warnings")
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--keep-inputs", action="store_true", help="keep every input batch for an end-of-epoch embedding dump")
args = p.parse_args()

distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
    warnlog = logging.getLogger("train").warning
else:
    def log(msg):
        print(f"[rank{rank}] {msg}" if distributed else msg, flush=True)
    warnlog = log

if args.sharing_strategy:
    torch.multiprocessing.set_sharing_strategy(args.sharing_strategy)


class SyntheticRegression(Dataset):
    def __init__(self, n, d, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, d, generator=g)
        w = torch.randn(d, 1, generator=g)
        self.y = self.x @ w + 0.1 * torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if args.item_sleep:
            time.sleep(args.item_sleep)
        return self.x[i], self.y[i]


def save_checkpoint(model, opt, step):
    state = {"model": (model.module if hasattr(model, "module") else model).state_dict(),
             "optimizer": opt.state_dict(), "step": step}
    os.makedirs(args.ckpt_dir, exist_ok=True)
    tag = f"{args.run_tag}_" if args.run_tag else ""
    final = os.path.join(args.ckpt_dir, f"{tag}ckpt_step{step:05d}.pt")
    if args.atomic_save:
        tmp = os.path.join(args.tmp_dir, f".ckpt_step{step:05d}.pt.tmp")
        torch.save(state, tmp)
        os.rename(tmp, final)
    elif args.save_via_buffer:
        import io
        buf = io.BytesIO()
        torch.save(state, buf)
        with open(final, "wb") as f:
            f.write(buf.getbuffer())
    else:
        torch.save(state, final)
    log(f"saved checkpoint {final} ({os.path.getsize(final)/1e6:.2f} MB)")


def main():
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        log(f"initialized process group: backend={dist.get_backend()} world_size={world} pid={os.getpid()}")
    else:
        log(f"single-process run, pid={os.getpid()}")
    torch.manual_seed(0)
    ds = SyntheticRegression(args.samples, args.features)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
    dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None,
                    num_workers=args.workers, timeout=args.loader_timeout,
                    persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Linear(args.features, args.hidden), nn.GELU(),
                          nn.Linear(args.hidden, args.hidden), nn.GELU(),
                          nn.Linear(args.hidden, 1))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    nparams = sum(p.numel() for p in model.parameters())
    log(f"model params={nparams} batch={args.batch} workers={args.workers} steps={args.steps}")
    if args.noisy:
        sched.step()  # (bug-ish) scheduler stepped before the first optimizer step
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.", UserWarning)
    lossf = nn.MSELoss()
    step = 0
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=100)
    t0 = time.time()
    seen_inputs = []
    done = False
    for epoch in range(10_000):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in dl:
            if args.fault != "none" and rank == args.fault_rank and step == args.fault_step:
                if args.fault == "segv":
                    # reading a feature buffer through a stale raw pointer (freed native buffer)
                    feat_ptr = ctypes.c_void_p()  # handle never filled in by the (skipped) native init
                    out_buf = ctypes.create_string_buffer(16)
                    ctypes.memmove(out_buf, feat_ptr.value or 0, 16)
                elif args.fault == "abort":
                    ctypes.CDLL(None).abort()
                elif args.fault == "bigalloc":
                    # evaluate a full similarity matrix over the dataset at once
                    big = ds.x @ ds.x.T
                    x = x + big[: x.shape[0], : x.shape[1]] * 0
            if args.keep_inputs:
                seen_inputs.append(x)  # kept for the end-of-run dump
            out = model(x)
            loss = lossf(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if args.step_sleep:
                time.sleep(args.step_sleep)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
            elif step % 5 == 0:
                log(f"epoch {epoch} step {step}/{args.steps} loss {loss.item():.4f} "
                    f"lr {sched.get_last_lr()[0]:.2e} {step/(time.time()-t0):.1f} it/s")
            if args.metrics_file and rank == 0 and step % 5 == 0:
                try:
                    with open(args.metrics_file, "a") as f:
                        f.write(f"{step},{loss.item():.6f}\n" + "#" * 2048 + "\n")
                except OSError as e:
                    warnlog(f"WARNING could not append metrics to {args.metrics_file}: {e}; continuing without metrics")
            if args.ckpt_dir and step % args.ckpt_every == 0:
                if rank == 0:
                    save_checkpoint(model, opt, step)
                if distributed:
                    dist.barrier()
            if step >= args.steps:
                done = True
                break
        if done:
            break
    if bar is not None:
        bar.close()
    log(f"training finished: {step} steps in {time.time()-t0:.1f}s final loss {loss.item():.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
