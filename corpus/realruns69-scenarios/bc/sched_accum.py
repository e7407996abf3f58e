"""Tiny GPT-2 LM trainer with LR schedule, gradient accumulation and clipping.

--fault:
  none              healthy (but: scheduler stepped at the top of the loop, DistributedSampler without set_epoch)
  onecycle_steps    OneCycleLR total_steps computed from optimizer steps of ONE epoch but stepped every micro-batch
  linear_decay_neg  linear-decay LambdaLR whose total_steps is smaller than the real step count -> LR goes negative
  accum_sum_loss    accumulates the loss tensor across micro-batches and calls backward on the running sum
--launch spawn     use torch.multiprocessing.spawn instead of an external launcher
"""
import argparse, os, sys, time, math, logging
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--launch", default="env")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--accum", type=int, default=4)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--n", type=int, default=256)
p.add_argument("--total-steps", type=int, default=0)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--port", type=int, default=31620)
args = p.parse_args()


def main(local_rank=None):
    if args.launch == "spawn":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=local_rank, world_size=args.nprocs, timeout=timedelta(seconds=30))
    elif "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    distributed = dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train")

    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(1234)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    log.info("model params: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 512, (args.n, 32), generator=g)
    ids[:, 1::2] = (ids[:, 0::2] * 7 + 3) % 512  # learnable structure
    ds = TensorDataset(ids)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, drop_last=True)

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    opt_steps_per_epoch = len(dl) // args.accum
    total = args.total_steps or opt_steps_per_epoch * args.epochs
    if args.fault == "onecycle_steps":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=total)
    else:
        warm = max(1, total // 10)
        def lr_lambda(s):
            if s < warm:
                return (s + 1) / warm
            return 1.0 - (s - warm) / (total - warm)  # linear decay to 0 at `total`
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    log.info("micro-batches/epoch=%d accum=%d optimizer steps/epoch=%d total scheduler steps=%d",
             len(dl), args.accum, opt_steps_per_epoch, total)

    step = 0
    model.train()
    for epoch in range(args.epochs):
        if sampler is not None and args.fault != "none":
            sampler.set_epoch(epoch)
        acc_loss = 0.0
        for i, (x,) in enumerate(dl):
            if args.fault == "none" and i % args.accum == 0:
                sched.step()  # (bug kept from old code: scheduler stepped before optimizer)
            out = model(input_ids=x, labels=x)
            loss = out.loss / args.accum
            if args.fault == "accum_sum_loss":
                acc_loss = acc_loss + loss  # keeps the graph of every micro-batch alive
                acc_loss.backward()
            else:
                loss.backward()
                acc_loss += loss.item()
            if args.fault == "onecycle_steps":
                sched.step()
            if (i + 1) % args.accum == 0:
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip,
                                                    error_if_nonfinite=True)
                opt.step()
                opt.zero_grad(set_to_none=True)
                if args.fault == "linear_decay_neg":
                    sched.step()
                step += 1
                lv = acc_loss.item() if torch.is_tensor(acc_loss) else acc_loss
                if step % 4 == 0 or args.fault == "linear_decay_neg":
                    log.info("epoch %d step %d loss %.4f grad_norm %.3f lr %.3e", epoch, step, lv,
                             gn.item(), sched.get_last_lr()[0])
                acc_loss = 0.0
    log.info("done: %d optimizer steps", step)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.launch == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=args.nprocs)
    else:
        main()
