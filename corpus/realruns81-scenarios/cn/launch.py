#!/usr/bin/env python
"""Experiment launcher: builds the torchrun command from a small job spec and runs it."""
import argparse, os, shlex, subprocess, sys, time

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--port", type=int, default=36703)
    p.add_argument("--script", default="scenarios/ddp_train.py")
    p.add_argument("--use-module", action="store_true", help="python -m torch.distributed.run instead of torchrun")
    p.add_argument("--single", action="store_true", help="run the script with plain python")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("rest", nargs=argparse.REMAINDER)
    a = p.parse_args()
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for kv in a.env:
        k, v = kv.split("=", 1); env[k] = v
    if a.single:
        cmd = ["timeout", "180", sys.executable, a.script] + rest
    elif a.use_module:
        cmd = ["timeout", "180", sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(a.nproc),
               "--master-port", str(a.port), a.script] + rest
    else:
        cmd = ["timeout", "180", "/work/rrvenv/bin/torchrun", "--nproc-per-node", str(a.nproc),
               "--master-port", str(a.port), a.script] + rest
    print(f"[launcher] {time.strftime('%Y-%m-%d %H:%M:%S')} job start", flush=True)
    print(f"[launcher] cmd: {shlex.join(cmd)}", flush=True)
    for kv in a.env:
        print(f"[launcher] env: {kv}", flush=True)
    t0 = time.time()
    try:
        subprocess.run(cmd, env=env, check=True)
    except subprocess.CalledProcessError as e:
        print(f"[launcher] job failed after {time.time()-t0:.1f}s with return code {e.returncode}", flush=True)
        raise
    print(f"[launcher] job succeeded in {time.time()-t0:.1f}s", flush=True)

if __name__ == "__main__":
    main()
