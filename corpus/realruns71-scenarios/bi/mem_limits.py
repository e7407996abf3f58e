"""Tiny DDP regression/classification trainer with an evaluation step that can
blow past the address-space limit (ulimit -v) on one rank."""
import argparse, os, sys, time, logging, math
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "cdist_eval", "confusion_np", "ngram_py", "grow_cache"])
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--eval-n", type=int, default=2000)
p.add_argument("--vocab", type=int, default=5000)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", default="31950")
args = p.parse_args()

def setup_log(rank):
    if args.logging:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    return logging.getLogger("train")

def say(log, msg):
    if args.logging: log.info(msg)
    else: print(msg, flush=True)

def main(rank=None, world=None):
    if rank is None:
        rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    else:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    log = setup_log(rank)
    torch.manual_seed(0)
    dist_on = world > 1
    if dist_on:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 32))
    if dist_on:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    it = range(1, args.steps + 1)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    cache = []
    for step in it:
        x = torch.randn(64, 32); y = x.roll(1, dims=1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 2 == 0 and not args.tqdm:
            say(log, f"[rank {rank}] step {step}/{args.steps} loss={loss.item():.4f} lr=1.0e-03")
        if args.fault == "grow_cache" and rank == args.fault_rank:
            # keeps every activation batch for a later "analysis" pass (bug: never cleared)
            cache.append(torch.randn(args.eval_n, 1024, 64))
            say(log, f"[rank {rank}] activation cache: {len(cache)} blocks, {sum(c.numel()*4 for c in cache)/2**30:.2f} GiB")
        if step == args.fault_step and rank == args.fault_rank and args.fault != "none":
            say(log, f"[rank {rank}] running evaluation at step {step}")
            with torch.no_grad():
                if args.fault == "cdist_eval":
                    emb = model(torch.randn(args.eval_n, 32))
                    sim = torch.cdist(emb, emb)            # N x N float32
                    say(log, f"[rank {rank}] retrieval@1 {(sim.argsort(1)[:,1] >= 0).float().mean():.3f}")
                elif args.fault == "confusion_np":
                    pred = np.random.randint(0, args.vocab, 1000); tgt = np.random.randint(0, args.vocab, 1000)
                    conf = np.zeros((args.vocab, args.vocab), dtype=np.float64)
                    np.add.at(conf, (tgt, pred), 1)
                    say(log, f"[rank {rank}] token acc {np.trace(conf)/conf.sum():.4f}")
                elif args.fault == "ngram_py":
                    toks = np.random.randint(0, 50000, args.eval_n).tolist()
                    grams = [tuple(toks[i:i+4]) for i in range(len(toks) - 3)]
                    grams_sorted = sorted(grams * 8)
                    say(log, f"[rank {rank}] distinct-4 {len(set(grams_sorted))/len(grams_sorted):.4f}")
        if dist_on and step % 5 == 0:
            t = torch.tensor([loss.item()]); dist.all_reduce(t)
            say(log, f"[rank {rank}] step {step} mean loss across ranks {t.item()/world:.4f}")
    say(log, f"[rank {rank}] training finished")
    if dist_on:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
