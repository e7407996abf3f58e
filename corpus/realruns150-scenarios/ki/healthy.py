"""Family: healthy runs that finish normally but print alarming-looking output."""
import logging, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _core

if __name__ == "__main__":
    p = _core.base_parser()
    p.add_argument("--scratch", default="/scratch/$USER/ckpt", help="preferred fast checkpoint dir")
    args = p.parse_args()
    rank, world = _core.init_dist(args.pg_timeout)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    lg = logging.getLogger("setup")
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
        lg.info("tensorboard logging enabled")
    except Exception:
        lg.exception("tensorboard unavailable, metrics go to CSV only")
    scratch = os.path.expandvars(args.scratch)
    try:
        os.makedirs(scratch, exist_ok=True)
        args.ckpt_dir = scratch
    except OSError as e:
        lg.warning("cannot use scratch dir %s (%s); falling back to %s", scratch, e, args.ckpt_dir)
    _core.run(args, rank, world)
    lg.info("done, exit 0")
