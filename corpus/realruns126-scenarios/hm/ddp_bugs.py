"""Tiny DDP trainer with switchable, rank-local bugs (gloo, CPU).

Faults (--fault):
  none            healthy run
  unused_one_rank the selected rank skips the aux head from --at-step on (data-dependent branch)
  unused_all      aux head never used on any rank (find_unused_parameters=False)
  shape           selected rank reads a different hidden size (per-host config override)
  buffer_dtype    selected rank converts its BatchNorm to float64 (mixed precision patch applied on one host)
  freeze_one_rank selected rank freezes the embedding layer before DDP wrap (stale config)
  freeze_after    selected rank freezes the first layer after the DDP wrap at --at-step
  uneven          manual sharding: selected rank gets fewer samples (no DistributedSampler, no Join)
  skip_batch      selected rank skips a batch with a bad sample at --at-step ('continue')
  join            uneven data handled with DDP Join (healthy)
  nosync_one_rank selected rank uses no_sync() for grad accumulation, others do not
"""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--samples", type=int, default=256)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--static-graph", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--stamp", action="store_true", help="python logging with timestamps")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=46090)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--sched", action="store_true", help="warmup scheduler stepped at the top of each iteration")
p.add_argument("--mse-aux", action="store_true", help="extra regression loss on the aux target")
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.emb = nn.Linear(32, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.body = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 4)
        self.aux_head = nn.Linear(hidden, 4)

    def forward(self, x, use_aux=True):
        h = torch.relu(self.bn(self.emb(x)))
        h = self.body(h) + h
        out = self.head(h)
        if use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out


def setup_log(rank):
    log = logging.getLogger("train")
    h = logging.StreamHandler(sys.stdout)
    if args.stamp:
        h.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s"))
    else:
        h.setFormatter(logging.Formatter(f"[rank{rank}] %(message)s"))
    log.addHandler(h)
    log.setLevel(logging.INFO)
    return log


def main(rank, world):
    log = setup_log(rank)
    torch.manual_seed(0)
    fault, bad = args.fault, args.bad_rank
    hidden = args.hidden
    if fault == "shape" and rank == bad:
        hidden = args.hidden + 32   # per-host override picked up from an old config
        log.info(f"loaded model config override: hidden_size={hidden}")
    log.info(f"init model hidden={hidden} world_size={world}")
    model = Net(hidden)
    if fault == "buffer_dtype" and rank == bad:
        model.bn.double()
        # keep params float, only buffers double (running stats in fp64 for 'numerical stability')
        model.bn.weight.data = model.bn.weight.data.float(); model.bn.bias.data = model.bn.bias.data.float()
    if fault == "freeze_one_rank" and rank == bad:
        for prm in model.emb.parameters():
            prm.requires_grad_(False)
        log.info("freezing emb (config: freeze_embeddings=true)")
    if fault == "freeze_all":
        # linear probing: freeze everything, unfreeze the modules listed in the config
        train_prefixes = ("classifier.", "pooler.")   # names from the HF-style config; this model calls it 'head'
        for n, prm in model.named_parameters():
            prm.requires_grad_(n.startswith(train_prefixes))
        log.info(f"trainable params: {sum(q.numel() for q in model.parameters() if q.requires_grad)}")
    ddp = DDP(model, find_unused_parameters=args.find_unused, static_graph=args.static_graph)
    opt = torch.optim.AdamW([q for q in ddp.parameters() if q.requires_grad], lr=1e-3)

    g = torch.Generator().manual_seed(1)
    X = torch.randn(args.samples, 32, generator=g)
    Y = torch.randint(0, 4, (args.samples,), generator=g)
    ds = TensorDataset(X, Y)
    if fault in ("uneven", "join"):
        # manual sharding: contiguous chunks, last rank gets the remainder
        per = args.samples // world
        lo = rank * per
        hi = args.samples if rank == world - 1 else lo + per
        if rank == bad:
            hi = lo + per - 3 * args.bs    # this rank's shard file had fewer records
        sub = torch.utils.data.Subset(ds, list(range(lo, hi)))
        dl = DataLoader(sub, batch_size=args.bs, shuffle=True, drop_last=True)
        log.info(f"shard rows {lo}:{hi} -> {len(dl)} batches/epoch")
        sampler = None
    else:
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
        dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, drop_last=True)
        log.info(f"{len(dl)} batches/epoch")
    lossf = nn.CrossEntropyLoss()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10)) if args.sched else None
    step = 0
    from contextlib import nullcontext
    joinctx = nullcontext()
    if fault == "join":
        from torch.distributed.algorithms.join import Join
        joinctx = Join([ddp])
    with joinctx:
        for ep in range(args.epochs):
            if sampler is not None:
                sampler.set_epoch(ep)
            it = dl
            if args.use_tqdm and rank == 0:
                from tqdm import tqdm
                it = tqdm(dl, desc=f"epoch {ep}", dynamic_ncols=False, ncols=90)
            t0 = time.time()
            for i, (x, y) in enumerate(it):
                if fault == "skip_batch" and rank == bad and step == args.at_step:
                    log.warning(f"step {step}: batch contains {int((x.abs() > 3.5).sum())} outlier values, skipping batch")
                    step += 1
                    continue
                use_aux = True
                if fault == "unused_all":
                    use_aux = False
                if fault == "unused_one_rank" and rank == bad and step >= args.at_step:
                    use_aux = bool((y == 3).float().mean() > 0.5)   # aux head only for 'hard' batches
                if fault == "freeze_after" and rank == bad and step == args.at_step:
                    for prm in ddp.module.emb.parameters():
                        prm.requires_grad_(False)
                    log.info("unfreezing schedule: freezing emb for warm-down")
                if fault == "nosync_one_rank" and rank == bad and step % 2 == 0:
                    with ddp.no_sync():
                        loss = lossf(ddp(x, use_aux=use_aux), y)
                        loss.backward()
                    step += 1
                    continue
                if sched is not None:
                    sched.step()
                out = ddp(x, use_aux=use_aux)
                loss = lossf(out, y)
                if args.mse_aux:
                    loss = loss + 0.01 * nn.functional.mse_loss(out[:, :1], y.float())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if step % 4 == 0 and not args.use_tqdm:
                    log.info(f"epoch {ep} step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.1e} {(time.time()-t0)/(i+1)*1000:.1f}ms/it")
                step += 1
            log.info(f"epoch {ep} done, {step} steps total")
    if args.ckpt_dir and rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        torch.save(ddp.module.state_dict(), os.path.join(args.ckpt_dir, "final.pt"))
        log.info(f"saved {args.ckpt_dir}/final.pt")
    dist.barrier()
    log.info("training finished")
    dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    main(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        main(dist.get_rank(), dist.get_world_size())
