"""Regenerate examples for slurm-preempted (CPU, torchrun + gloo; SLURM lines added).

SLURM is not available on this machine. The torchrun/worker output is real (a healthy
gloo training loop whose torchrun agent receives SIGTERM, exactly what slurmstepd
sends at the time limit); this script adds what SLURM itself prints, in the format of
SLURM's source (src/slurmd/slurmstepd/req.c, srun): the `srun --label` task prefix
("0: ") on the task's output, the `slurmstepd: error: *** STEP/JOB ... CANCELLED AT ...
DUE TO PREEMPTION / NODE FAILURE ***` line at the moment the signal is sent, and srun's
"Job step aborted" notice.

positive-1.log: srun --label, 2 ranks, STEP cancelled DUE TO PREEMPTION.
positive-2.log: 4 ranks under torchrun --tee 3, JOB cancelled DUE TO NODE FAILURE
                (current format with ", SEE SLURMCTLD LOG FOR DETAILS").
negative-1.log: same teardown, but the slurmstepd line says DUE TO TIME LIMIT.

Run: .venv/bin/python scripts/examples/slurm-preempted.py
"""

from __future__ import annotations

import signal

from _runner import run_signalled

# The job is _runner.SIGNALLED_TRAIN, the healthy gloo loop these three generators share.
ID = "slurm-preempted"


if __name__ == "__main__":
    run_signalled(ID, "positive-1.log", ["--nproc-per-node", "2", "--master-port", "29721"],
                  "plain", signal.SIGTERM, "agent",
                  label="0: ",
                  inject="slurmstepd: error: *** STEP 5520981.0 ON gpu-h100-112 CANCELLED AT {now} DUE TO PREEMPTION ***\n"
                         "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
    run_signalled(ID, "positive-2.log", ["--nproc-per-node", "4", "--master-port", "29722", "--tee", "3"],
                  "plain", signal.SIGTERM, "agent",
                  inject="slurmstepd: error: *** JOB 5520999 ON gpu-h100-113 CANCELLED AT {now} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
    run_signalled(ID, "negative-1.log", ["--nproc-per-node", "2", "--master-port", "29723"],
                  "plain", signal.SIGTERM, "agent",
                  label="0: ",
                  inject="slurmstepd: error: *** STEP 5521003.0 ON gpu-h100-112 CANCELLED AT {now} DUE TO TIME LIMIT ***")
