"""Driver that resolves the training shard list and hands it to the shell launcher on the command line."""
import glob, logging, subprocess, sys, os
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s driver: %(message)s")
root = "/work/rr59/x/work/manyshards"
if not os.path.isdir(root):
    os.makedirs(root)
    for i in range(6000):
        open(f"{root}/cc-2026-49-part-{i:06d}-of-006000.tok.bin", "w").close()
files = sorted(glob.glob(f"{root}/*.tok.bin"))
logging.info("resolved %d shards under %s", len(files), root)
cmd = ["/work/rr59/x/scenarios/launch_bg.sh", sys.argv[1], "2", "--steps", "6", "--data", ",".join(files)]
logging.info("launching trainer: %s ... (%d chars)", " ".join(cmd[:5]), sum(len(c) for c in cmd))
subprocess.run(cmd, check=True)
logging.info("done")
