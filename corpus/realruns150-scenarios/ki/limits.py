"""Family: runs ended by resource limits (ulimit/prlimit: address space, open files, file size, CPU time)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _core

if __name__ == "__main__":
    p = _core.base_parser()
    p.add_argument("--pidfile-dir", default=None)
    p.add_argument("--feature-cache-rows", type=int, default=0,
                   help="precompute a float64 feature cache of N x 4096 with numpy before training")
    args = p.parse_args()
    if args.feature_cache_rows:
        import numpy as np
        print(f"building feature cache: {args.feature_cache_rows} x 4096 float64", flush=True)
        feats = np.zeros((args.feature_cache_rows, 4096))
        feats += np.random.default_rng(0).standard_normal(4096)
        print(f"feature cache ready: {feats.nbytes / 2**20:.0f} MiB", flush=True)
    rank, world = _core.init_dist(args.pg_timeout)
    if args.pidfile_dir:
        os.makedirs(args.pidfile_dir, exist_ok=True)
        with open(os.path.join(args.pidfile_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    _core.run(args, rank, world)
