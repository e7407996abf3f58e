#!/usr/bin/env python
"""Python job launcher: runs the torchrun job via run_with_retries.sh and tails progress into one log.
usage: launch.py --tag NAME -- [training args]"""
import argparse, datetime, os, subprocess, sys, time
p = argparse.ArgumentParser(); p.add_argument("--tag", default="job"); p.add_argument("rest", nargs=argparse.REMAINDER)
a = p.parse_args()
rest = a.rest[1:] if a.rest and a.rest[0] == "--" else a.rest
def log(m): print(f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M:%S} launch.py[{os.getpid()}] {m}", flush=True)
log(f"submitting job tag={a.tag}")
here = os.path.dirname(os.path.abspath(__file__))
t0 = time.time()
proc = subprocess.Popen([os.path.join(here, "run_with_retries.sh")] + rest, stdout=sys.stdout, stderr=subprocess.STDOUT)
rc = proc.wait()
log(f"job {a.tag} finished rc={rc} after {time.time()-t0:.1f}s")
if rc != 0:
    log(f"job {a.tag} FAILED; see above for the first error")
sys.exit(rc)
