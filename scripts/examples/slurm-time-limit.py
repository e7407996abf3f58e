"""Regenerate examples for slurm-time-limit (CPU, torchrun + gloo; SLURM lines added).

SLURM is not available on this machine. The torchrun/worker output is real (a healthy
gloo training loop whose torchrun agent receives SIGTERM, exactly what slurmstepd
sends at the time limit); this script adds what SLURM itself prints, in the format of
SLURM's source (src/slurmd/slurmstepd/req.c, srun): the `srun --label` task prefix
("0: ") on the task's output, the `slurmstepd: error: *** STEP/JOB ... CANCELLED AT ...
DUE TO TIME LIMIT ***` line at the moment the signal is sent, and srun's
"Job step aborted" notice.

positive-1.log: srun --label, 2 ranks on one node, STEP cancelled at the time limit.
positive-2.log: sbatch batch-step output without --label, 4 ranks under torchrun --tee 3,
                JOB cancelled at the time limit (old SLURM format without "ON <node>").
negative-1.log: same teardown, but the slurmstepd line says DUE TO PREEMPTION.

Run: .venv/bin/python scripts/examples/slurm-time-limit.py
"""

from __future__ import annotations

import signal

from _runner import run_signalled

# The job is _runner.SIGNALLED_TRAIN, the healthy gloo loop these three generators share.
ID = "slurm-time-limit"


if __name__ == "__main__":
    run_signalled(ID, "positive-1.log", ["--nproc-per-node", "2", "--master-port", "29711"],
                  "plain", signal.SIGTERM, "agent",
                  label="0: ",
                  inject="slurmstepd: error: *** STEP 4817293.0 ON gpu-a100-017 CANCELLED AT {now} DUE TO TIME LIMIT ***\n"
                         "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    run_signalled(ID, "positive-2.log", ["--nproc-per-node", "4", "--master-port", "29712", "--tee", "3"],
                  "plain", signal.SIGTERM, "agent",
                  inject="slurmstepd: error: *** JOB 311842 CANCELLED AT {now} DUE TO TIME LIMIT ***")
    run_signalled(ID, "negative-1.log", ["--nproc-per-node", "2", "--master-port", "29713"],
                  "plain", signal.SIGTERM, "agent",
                  label="0: ",
                  inject="slurmstepd: error: *** STEP 4817302.0 ON gpu-a100-017 CANCELLED AT {now} DUE TO PREEMPTION ***")
