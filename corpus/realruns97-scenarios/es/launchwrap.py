"""Cluster-launcher emulations that only add line prefixes, as the real tools do.

  launchwrap.py srun N -- cmd ...          like `srun -l -n N cmd`: N tasks with SLURM_PROCID/SLURM_NTASKS,
                                           each output line prefixed 'TASK: '
  launchwrap.py pods a,b -- cmd ... {i}     like `kubectl logs -f --prefix` over one pod per name, each pod
                                           runs the command with {i} -> pod index; prefix '[pod/NAME/pytorch] '
Output of every task is stdout+stderr merged and forwarded line by line as it arrives.
"""
import os
import subprocess
import sys
import threading

mode, spec = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
lock = threading.Lock()


def pump(proc, prefix):
    for raw in iter(proc.stdout.readline, b""):
        with lock:
            sys.stdout.buffer.write(prefix.encode() + raw)
            sys.stdout.buffer.flush()


procs = []
if mode == "srun":
    n = int(spec)
    for t in range(n):
        env = dict(os.environ, SLURM_PROCID=str(t), SLURM_NTASKS=str(n), SLURM_LOCALID=str(t),
                   SLURM_JOB_ID=os.environ.get("SLURM_JOB_ID", "48213"))
        pr = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append((pr, f"{t}: "))
else:
    names = spec.split(",")
    for i, name in enumerate(names):
        c = [a.replace("{i}", str(i)) for a in cmd]
        env = dict(os.environ, HOSTNAME=name, POD_NAME=name)
        pr = subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append((pr, f"[pod/{name}/pytorch] "))
ths = [threading.Thread(target=pump, args=pp) for pp in procs]
for t in ths:
    t.start()
rc = 0
for pr, _ in procs:
    r = pr.wait()
    rc = rc or r
for t in ths:
    t.join()
sys.exit(1 if rc else 0)
