"""Regenerate real examples for launcher-signal-received (CPU, torchrun + gloo).

A healthy 2- or 4-rank training loop runs under torchrun; after a few steps this
script signals the torchrun *agent* process itself (not a worker), as a closed
terminal (SIGHUP) or a `kill`/`docker stop` (SIGTERM) would. The agent logs
"Received N death signal, shutting down workers", forwards the signal to its
workers and exits with torch.distributed.elastic.multiprocessing.api.SignalException.

positive-1.log: SIGHUP to torchrun (ssh session dropped, no nohup/tmux), 2 ranks.
positive-2.log: SIGTERM to torchrun, 4 ranks under `torchrun --tee 3`.
negative-1.log: SIGTERM sent to the workers (as a scheduler's grace-period signal
                would be); the training script's own SIGTERM handler saves a
                checkpoint and exits 0, torchrun reports success.
negative-2.log: the same SIGTERM to the agent, but the log is a SLURM job that hit
                its time limit: the `slurmstepd: error: *** STEP ... CANCELLED AT ...
                DUE TO TIME LIMIT ***` line (SLURM's printed format, inserted by this
                script at the moment the signal is sent, with `srun --label`'s
                "0: " prefix on the task output) explains the signal.

Run: .venv/bin/python scripts/examples/launcher-signal-received.py
"""

from __future__ import annotations

import signal

from _runner import run_signalled

# The job is _runner.SIGNALLED_TRAIN, the healthy gloo loop these three generators share.
ID = "launcher-signal-received"


if __name__ == "__main__":
    run_signalled(ID, "positive-1.log", ["--nproc-per-node", "2", "--master-port", "29701"],
                  "plain", signal.SIGHUP, "agent")
    run_signalled(ID, "positive-2.log", ["--nproc-per-node", "4", "--master-port", "29702", "--tee", "3"],
                  "plain", signal.SIGTERM, "agent")
    run_signalled(ID, "negative-1.log", ["--nproc-per-node", "2", "--master-port", "29703"],
                  "handle", signal.SIGTERM, "workers")
    run_signalled(ID, "negative-2.log", ["--nproc-per-node", "2", "--master-port", "29704"],
                  "plain", signal.SIGTERM, "agent",
                  label="0: ",
                  inject="slurmstepd: error: *** STEP 4817293.0 ON gpu-a100-017 CANCELLED AT {now} DUE TO TIME LIMIT ***")
