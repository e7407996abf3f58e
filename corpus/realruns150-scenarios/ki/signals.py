"""Family: runs stopped from outside by signals (user kill, scheduler timeout, Ctrl-C)."""
import os, sys, signal, faulthandler
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _core


def _worker(local_rank, args, world):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world))
    main(args)


def main(args):
    rank, world = _core.init_dist(args.pg_timeout)
    if args.pidfile_dir:
        os.makedirs(args.pidfile_dir, exist_ok=True)
        with open(os.path.join(args.pidfile_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    if args.usr1_dump:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    _core.run(args, rank, world)


if __name__ == "__main__":
    p = _core.base_parser()
    p.add_argument("--pidfile-dir", default=None, help="write <dir>/rank<R>.pid so an operator can signal a rank")
    p.add_argument("--usr1-dump", action="store_true", help="dump stacks on SIGUSR1 (status probe)")
    p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
    p.add_argument("--port", type=int, default=48450)
    args = p.parse_args()
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        mp.spawn(_worker, args=(args, args.spawn), nprocs=args.spawn, join=True)
    else:
        main(args)
