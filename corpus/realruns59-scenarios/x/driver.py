"""Experiment driver: launches the trainer script as a subprocess (shell launcher) and checks its exit code."""
import argparse, logging, subprocess, sys, time, shlex
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s driver: %(message)s")
p = argparse.ArgumentParser(); p.add_argument("--port", default="30112"); p.add_argument("--nproc", default="2")
p.add_argument("rest", nargs=argparse.REMAINDER)
a = p.parse_args()
cmd = ["/work/rr59/x/scenarios/launch_bg.sh", a.port, a.nproc] + [x for x in a.rest if x != "--"]
logging.info("experiment resume-ft: launching %s", shlex.join(cmd))
t = time.time()
subprocess.run(cmd, check=True)
logging.info("trainer finished in %.1fs", time.time() - t)
