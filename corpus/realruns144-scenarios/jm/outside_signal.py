"""DDP training on a tiny MLP regression task.  Each rank publishes its pid and the last
finished step under --rundir so that an *outside* process (scenarios/kill_at_step.sh,
a wall-clock `timeout`, ...) can stop it at a known point.  Nothing in here raises the
failure itself."""
import argparse, os, sys, time, signal, logging, faulthandler
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--rundir", default="run")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--fmt", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--monitored-barrier-every", type=int, default=0)
p.add_argument("--stack-dump-after", type=float, default=0)
p.add_argument("--graceful-sigterm", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=47180)
p.add_argument("--slow-warn", type=float, default=0)
args = p.parse_args()


def main(local_rank=None):
    if local_rank is not None:  # mp.spawn path
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(args.spawn),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    if args.fmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info if args.fmt == "logging" else (lambda m: print(f"[rank{rank}] {m}", flush=True))

    os.makedirs(args.rundir, exist_ok=True)
    with open(f"{args.rundir}/rank{rank}.pid", "w") as f:
        f.write(str(os.getpid()))

    if args.graceful_sigterm:
        def on_term(signum, frame):
            say(f"received {signal.Signals(signum).name}, saving emergency checkpoint and exiting")
            sys.stdout.flush()
            sys.exit(128 + signum)
        signal.signal(signal.SIGTERM, on_term)

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    say(f"init done: world_size={world} backend={dist.get_backend()} pid={os.getpid()}")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(100 + rank)
    w_true = torch.randn(32, 1, generator=torch.Generator().manual_seed(7))
    progress = {"t": time.time(), "step": 0}
    if args.stack_dump_after:
        import threading
        def watchdog():  # prints this rank's stacks once if no step finishes for a while
            while True:
                time.sleep(1)
                idle = time.time() - progress["t"]
                if idle > args.stack_dump_after:
                    print(f"[rank{rank}] watchdog: no step finished for {idle:.0f}s (last step {progress['step']}), dumping stacks:", file=sys.stderr, flush=True)
                    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
                    return
        threading.Thread(target=watchdog, daemon=True).start()
    it = range(1, args.steps + 1)
    if args.fmt == "tqdm" and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, mininterval=0.5)
    last = time.time(); times = []
    for step in it:
        x = torch.randn(64, 32, generator=g)
        y = x @ w_true + 0.1 * torch.randn(64, 1, generator=g)
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        time.sleep(args.step_sleep)
        if args.monitored_barrier_every and step % args.monitored_barrier_every == 0:
            dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
        now = time.time(); dt = now - last; last = now; times.append(dt)
        if args.slow_warn and len(times) > 5:
            med = sorted(times)[len(times) // 2]
            if dt > args.slow_warn * med:
                say(f"WARNING: step {step} took {dt:.2f}s, {dt/med:.1f}x the median step time ({med:.2f}s); a rank may be straggling")
        with open(f"{args.rundir}/rank{rank}.step", "w") as f:
            f.write(str(step))
        progress["t"] = time.time(); progress["step"] = step
        if step % 5 == 0:
            l = loss.detach().clone(); dist.all_reduce(l); l /= world
            if args.fmt == "tqdm":
                if rank == 0:
                    it.set_postfix(loss=f"{l.item():.4f}")
            else:
                say(f"step {step}/{args.steps} loss={l.item():.4f} lr={opt.param_groups[0]['lr']:.1e} step_time={dt:.3f}s")
    dist.barrier()
    say("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=args.spawn, join=True)
    else:
        main()
