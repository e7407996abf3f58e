"""DDP trainer that checkpoints periodically; used to hit storage limits
(small tmpfs, ulimit -f) while saving."""
import argparse, os, sys, time, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=5)
p.add_argument("--width", type=int, default=512)
p.add_argument("--format", default="torch", choices=["torch", "numpy", "hf"])
p.add_argument("--save-rank", default="0", help="'0' = rank 0 only, 'all' = every rank writes its shard")
p.add_argument("--keep-all", action="store_true", help="do not delete older checkpoints")
p.add_argument("--logging", action="store_true")
p.add_argument("--run-log-dir", default=None, help="rank 0 also writes a per-step file log here")
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if args.logging:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger(f"trainer.rank{rank}")
def say(m):
    (log.info(m) if args.logging else print(m, flush=True))

def attach_file_log(step):
    # (re)configure the run's file logger; called from the step hook
    fh = logging.FileHandler(os.path.join(args.run_log_dir, "train_metrics.log"))
    fh.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    mlog = logging.getLogger("metrics"); mlog.setLevel(logging.INFO); mlog.propagate = False
    mlog.addHandler(fh)
    return mlog

def build():
    if args.format == "hf":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=2, n_embd=args.width, n_head=4, vocab_size=8000, n_positions=64)
        return GPT2LMHeadModel(cfg)
    return nn.Sequential(nn.Linear(64, args.width), nn.GELU(), nn.Linear(args.width, args.width), nn.GELU(), nn.Linear(args.width, 64))

def batch(model):
    if args.format == "hf":
        ids = torch.randint(0, 8000, (4, 32))
        return model(input_ids=ids, labels=ids).loss
    x = torch.randn(32, 64)
    return nn.functional.mse_loss(model(x), x.flip(1))

def save(model, opt, step):
    core = model.module if hasattr(model, "module") else model
    writers = range(world) if args.save_rank == "all" else [int(args.save_rank)]
    if rank not in writers: return
    d = os.path.join(args.out, f"step_{step:06d}")
    os.makedirs(d, exist_ok=True)
    t = time.time()
    if args.format == "torch":
        fn = os.path.join(d, f"model_rank{rank}.pt" if args.save_rank == "all" else "checkpoint.pt")
        torch.save({"model": core.state_dict(), "optimizer": opt.state_dict(), "step": step}, fn)
    elif args.format == "numpy":
        fn = os.path.join(d, f"params_rank{rank}.npz")
        np.savez(fn, **{k: v.detach().numpy() for k, v in core.state_dict().items()})
        fn2 = os.path.join(d, f"adam_rank{rank}.npy")
        np.save(fn2, np.concatenate([s["exp_avg"].flatten().numpy() for s in opt.state_dict()["state"].values()]))
    else:
        core.save_pretrained(d)
        torch.save(opt.state_dict(), os.path.join(d, "optimizer.pt"))
        fn = d
    say(f"[rank {rank}] saved checkpoint {d} in {time.time()-t:.2f}s")

def main():
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = build()
    n = sum(p.numel() for p in model.parameters())
    say(f"[rank {rank}] model params: {n/1e6:.2f}M (~{n*4*3/2**20:.1f} MiB per checkpoint incl. Adam state)")
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    for step in range(1, args.steps + 1):
        loss = batch(model)
        opt.zero_grad(); loss.backward(); opt.step()
        if args.run_log_dir and rank == 0:
            attach_file_log(step).info(f"step={step} loss={loss.item():.5f}")
        if step % 2 == 0:
            say(f"[rank {rank}] step {step} loss {loss.item():.4f}")
        if step % args.save_every == 0:
            save(model, opt, step)
            if world > 1: dist.barrier()
    say(f"[rank {rank}] finished {args.steps} steps")
    if world > 1:
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
