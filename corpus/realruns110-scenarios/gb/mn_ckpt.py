"""Multi-node checkpoint scenarios: node-local resume copies and node-local checkpoint writes.

Each node keeps its own copy of the run config and of the resume checkpoint under $NODE_ROOT/scratch
(as after an rsync from shared storage). Faults are in those node-local files/dirs, not in the code:
  --resume            every rank loads $NODE_ROOT/scratch/ckpt/last.pt
  --save-every N      local rank 0 of every node writes a node-local checkpoint every N steps
  --config            model shape read from $NODE_ROOT/scratch/model_config.json
"""
import argparse, json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
import mnlib


def main():
    p = mnlib.base_parser()
    p.add_argument("--resume", action="store_true")
    p.add_argument("--config", action="store_true")
    p.add_argument("--ckpt-name", default="last.pt")
    p.add_argument("--save-dir", default=None)
    p.add_argument("--fileobj", action="store_true", help="stream the checkpoint through a Python file object")
    p.add_argument("--pad-state", type=int, default=0, help="extra MB of EMA/buffer state saved with the checkpoint")
    args = p.parse_args()
    rank, world, local_rank, log = mnlib.setup(args)
    scratch = os.path.join(mnlib.NODE_ROOT, "scratch")

    cfg = {"vocab": args.vocab, "hidden": args.hidden, "layers": 2}
    if args.config:
        with open(os.path.join(scratch, "model_config.json")) as f:
            cfg.update(json.load(f))
        log.info(f"model config {cfg}")
    model = mnlib.TinyClassifier(cfg["vocab"], cfg["hidden"], layers=cfg["layers"])
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    start = 0
    if args.resume:
        path = os.path.join(scratch, "ckpt", args.ckpt_name)
        log.info(f"resuming from {path}")
        ckpt = torch.load(path, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
        log.info(f"resumed at step {start}")
    model = DDP(model)
    log.info(f"DDP ready, {sum(p.numel() for p in model.parameters())} parameters")

    ds = mnlib.JsonlShard(os.path.join(mnlib.NODE_ROOT, "data", f"shard-{rank % 4:05d}.jsonl"))
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, drop_last=True)
    ema = torch.zeros(args.pad_state * 262144) if args.pad_state else None
    t0 = time.time()
    for step, (ids, labels), bar in mnlib.iterate(args, loader, log, rank):
        step += start
        loss = F.cross_entropy(model(ids), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            avg = mnlib.allreduce_mean(loss.item(), world)
            if rank == 0:
                log.info(f"step {step} loss {avg:.4f} ({time.time()-t0:.1f}s)")
        if args.save_every and (step + 1) % args.save_every == 0 and local_rank == 0:
            d = args.save_dir or os.path.join(scratch, "ckpt")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, f"step{step+1:06d}.pt")
            state = {"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                     "step": step + 1, "ema": ema}
            if args.fileobj:
                with open(path, "wb") as fh:
                    torch.save(state, fh)
            else:
                torch.save(state, path)
            log.info(f"saved node-local checkpoint {path} ({os.path.getsize(path)/1e6:.1f} MB)")
        time.sleep(args.sleep)
    dist.barrier()
    if rank == 0:
        log.info(f"done: {args.steps} steps in {time.time()-t0:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
