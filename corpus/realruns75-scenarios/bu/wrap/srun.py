#!/usr/bin/env python3
"""Tiny stand-in for 'srun --label -N1 -n N': starts N tasks with SLURM_* / RANK env,
prefixes every output line with 'TASK: ' like srun --label, and reports failed tasks
the way srun does ('srun: error: HOST: task T: Exited with exit code C')."""
import os, sys, subprocess, threading, signal, socket, argparse
ap = argparse.ArgumentParser()
ap.add_argument("-n", type=int, required=True)
ap.add_argument("--label", action="store_true")
ap.add_argument("--port", type=int, default=35500)
ap.add_argument("--nodename", default=socket.gethostname())
ap.add_argument("cmd", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
lock = threading.Lock()
jobid = str(os.getpid() % 90000 + 100000)
def pump(i, stream):
    for line in iter(stream.readline, b""):
        with lock:
            if a.label:
                sys.stdout.buffer.write(f"{i}: ".encode())
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
procs, threads = [], []
for i in range(a.n):
    env = dict(os.environ, SLURM_PROCID=str(i), SLURM_LOCALID=str(i), SLURM_NTASKS=str(a.n),
               SLURM_JOB_ID=jobid, SLURM_STEP_ID="0", SLURMD_NODENAME=a.nodename,
               RANK=str(i), LOCAL_RANK=str(i), WORLD_SIZE=str(a.n), LOCAL_WORLD_SIZE=str(a.n),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port), PYTHONUNBUFFERED="1")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    procs.append(p)
    t = threading.Thread(target=pump, args=(i, p.stdout)); t.start(); threads.append(t)
rc = 0
import time
pending = set(range(a.n))
while pending:
    for i in sorted(pending):
        c = procs[i].poll()
        if c is None:
            continue
        pending.discard(i)
        threads[i].join()
        if c != 0:
            rc = rc or (c if c > 0 else 128 - c)
            with lock:
                if c < 0:
                    sys.stdout.write(f"srun: error: {a.nodename}: task {i}: {signal.strsignal(-c)}\n")
                else:
                    sys.stdout.write(f"srun: error: {a.nodename}: task {i}: Exited with exit code {c}\n")
                sys.stdout.flush()
    time.sleep(0.05)
sys.exit(rc)
