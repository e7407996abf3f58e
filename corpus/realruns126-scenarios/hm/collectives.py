"""Hand-written torch.distributed training loop (manual gradient all-reduce, gloo, CPU) with rank-local bugs.

--fault:
  none           healthy
  eval_branch    ranks whose validation shard is empty skip the metric all_reduce at eval time
  gather_preds   all_gather of per-rank prediction tensors whose length differs (last partial batch)
  avg_op         gradient averaging with ReduceOp.AVG
  slow_eval      one rank runs a long extra evaluation before the epoch-end monitored_barrier
  ckpt           rank 0 writes a checkpoint into --ckpt-dir while the others wait at a barrier
  bcast_shape    rank 0 broadcasts a resized vocabulary embedding the other ranks did not resize
"""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=4)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--eval-every", type=int, default=4)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--ckpt-mb", type=int, default=4)
p.add_argument("--barrier-timeout", type=int, default=10)
p.add_argument("--plain-barrier", action="store_true")
p.add_argument("--eval-iters", type=int, default=25)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=46096)
args = p.parse_args()


def run(rank, world):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [%(levelname)s] rank{rank}/{world} %(message)s")
    log = logging.getLogger("trainer")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(100, 32), nn.Flatten(), nn.Linear(32 * 8, 64), nn.ReLU(), nn.Linear(64, 10))
    if args.fault == "ckpt":
        model.register_buffer("replay_table", torch.zeros(args.ckpt_mb * 262144))  # 4 bytes each
    for q in model.parameters():
        dist.broadcast(q.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(10 + rank)
    n_val = 0 if (args.fault == "eval_branch" and rank == args.bad_rank) else 40
    val_x = torch.randint(0, 100, (n_val, 8), generator=g)
    val_y = torch.randint(0, 10, (n_val,), generator=g)
    log.info(f"train shard ready, val samples on this rank: {n_val}")
    for step in range(args.steps):
        x = torch.randint(0, 100, (16, 8), generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        for q in model.parameters():
            if args.fault == "avg_op":
                dist.all_reduce(q.grad, op=dist.ReduceOp.AVG)
            else:
                dist.all_reduce(q.grad)
                q.grad /= world
        opt.step()
        log.info(f"step {step} loss {loss.item():.4f}")
        if (step + 1) % args.eval_every == 0:
            with torch.no_grad():
                if n_val > 0:
                    pred = model(val_x).argmax(-1)
                    stats = torch.tensor([(pred == val_y).sum().item(), float(n_val)])
                    dist.all_reduce(stats)
                    if rank == 0:
                        log.info(f"eval@{step}: acc {stats[0] / stats[1]:.3f}")
                else:
                    log.warning("no validation data on this rank, skipping eval")
                if args.fault == "gather_preds" and step + 1 >= args.at_step:
                    keep = 40 if rank != args.bad_rank else 37  # this rank dropped 3 samples with empty text
                    pred = model(val_x[:keep]).argmax(-1)
                    bufs = [torch.empty_like(pred) for _ in range(world)]
                    dist.all_gather(bufs, pred)
                    if rank == 0:
                        log.info(f"gathered {sum(b.numel() for b in bufs)} predictions")
                if args.fault == "slow_eval" and rank == args.bad_rank:
                    log.info("running full-vocabulary generation eval on this rank")
                    big = torch.randn(1500, 1500)
                    t0 = time.time()
                    for _ in range(args.eval_iters):
                        big = torch.tanh(big @ big / 1500.0)
                    log.info(f"generation eval done in {time.time() - t0:.1f}s")
                if args.fault == "slow_eval" and args.plain_barrier:
                    dist.barrier()
                elif args.fault == "slow_eval":
                    dist.monitored_barrier(timeout=timedelta(seconds=args.barrier_timeout))
                if args.fault == "ckpt":
                    if rank == 0:
                        os.makedirs(args.ckpt_dir, exist_ok=True)
                        path = os.path.join(args.ckpt_dir, f"step{step + 1}.pt")
                        log.info(f"saving checkpoint to {path}")
                        with open(path, "wb") as f:
                            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, f)
                        log.info(f"checkpoint saved ({os.path.getsize(path) / 1e6:.1f} MB)")
                    dist.barrier()
                if args.fault == "bcast_shape" and step + 1 == args.at_step:
                    emb = model[0]
                    if rank == 0:
                        # tokenizer got 4 new special tokens on rank 0 only (added after loading)
                        emb = nn.Embedding(104, 32)
                        emb.weight.data[:100] = model[0].weight.data
                        model[0] = emb
                        log.info("resized token embeddings to 104")
                    dist.broadcast(model[0].weight.data, src=0)
    dist.barrier()
    log.info("training complete")
    dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    run(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        run(dist.get_rank(), dist.get_world_size())
