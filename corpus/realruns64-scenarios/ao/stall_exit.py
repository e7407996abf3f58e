"""A rank that stalls (sleeps / blocks on a lock or stdin) or leaves the job early (exit 0 / exit 1 /
runs out of data) while the other ranks wait in a collective."""
import os, sys, time, fcntl
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *


def main_worker(rank, world, args):
    if args.mode != "env":
        init_dist(args.timeout, rank, world, args.port)
    else:
        rank, world = init_dist(args.timeout)
    log = setup_logger(rank, args.logstyle)
    log(f"process group ready: backend={dist.get_backend()} world_size={world} timeout={args.timeout}s")

    def hook(step):
        if args.fault == "monitored" and rank == args.fault_rank and step == args.fault_step:
            log(f"step {step}: re-indexing local dataset cache before health check")
            time.sleep(args.timeout * 3)
        if step > 0 and step % 10 == 0 and args.fault == "monitored":
            # health check every 10 steps
            dist.monitored_barrier(timeout=timedelta(seconds=args.timeout))
        if rank != args.fault_rank or step != args.fault_step:
            return
        if args.fault == "sleep":
            log(f"step {step}: uploading checkpoint to remote storage (synchronous)")
            time.sleep(args.timeout * 3)
        elif args.fault == "lock":
            # waits for a lock file that a previous (dead) run still 'holds'
            os.makedirs(args.out, exist_ok=True)
            lockp = os.path.join(args.out, "ckpt.lock")
            log(f"step {step}: acquiring {lockp} before writing checkpoint")
            fd = os.open(lockp, os.O_CREAT | os.O_RDWR)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(1)
        elif args.fault == "input":
            log(f"step {step}: loss plateau detected, continue? [y/N]")
            ans = input()
            log(f"answer={ans!r}")
        elif args.fault == "exit0":
            log(f"step {step}: early stopping criterion met (val loss did not improve for 3 evals), stopping")
            sys.exit(0)
        elif args.fault == "exit1":
            cfg = os.path.join(args.out, "eval_config.yaml")
            if not os.path.exists(cfg):
                print(f"eval config {cfg} missing, aborting", file=sys.stderr)
                sys.exit(1)

    if args.fault == "uneven":
        # each rank reads its own shard list; shards have different lengths and no sampler padding
        run_uneven(args, rank, world, log)
    else:
        train(args, rank, world, hook, log)
    dist.barrier()
    log("all ranks done")
    dist.destroy_process_group()


def run_uneven(args, rank, world, log):
    torch.manual_seed(0)
    model = DDP(make_model())
    ds = SynthDataset(n=2048)
    # manual sharding by file: rank r gets files r, r+world, ...; last shard is short
    n_files = 7
    per_file = 64
    idx = [i for f in range(rank, n_files, world) for i in range(f * per_file, (f + 1) * per_file)]
    sub = torch.utils.data.Subset(ds, idx)
    dl = DataLoader(sub, batch_size=16, shuffle=True)
    log(f"rank {rank}: {len(sub)} samples, {len(dl)} batches per epoch")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    step = 0
    for epoch in range(args.epochs):
        for x, y in dl:
            loss = lossf(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 4 == 0:
                log(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            step += 1
            time.sleep(0.05)
        log(f"epoch {epoch} done ({step} steps)")
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.out, "final.pt"))
        log("saved final.pt")


if __name__ == "__main__":
    p = base_parser()
    p.add_argument("--mode", default="env", choices=["env", "spawn"])
    args = p.parse_args()
    if args.mode == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
    else:
        main_worker(None, None, args)
