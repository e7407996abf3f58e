"""Family: checkpoint storage problems (full disk, read-only mount, permissions, deleted working dir)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _core

if __name__ == "__main__":
    p = _core.base_parser()
    p.add_argument("--pidfile-dir", default=None)
    args = p.parse_args()
    rank, world = _core.init_dist(args.pg_timeout)
    if args.pidfile_dir:
        os.makedirs(args.pidfile_dir, exist_ok=True)
        with open(os.path.join(args.pidfile_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    _core.run(args, rank, world)
