#!/usr/bin/env python
"""Regenerate the examples of `rendezvous-timeout` with real runs on CPU (short timeouts).

positive-1: torchrun --nnodes 2 static rendezvous, only node 0 started: the agent's TCPStore
            server waits for the second node and gives up (DistStoreError: Timed out after
            ... waiting for clients. 1/2 clients joined).
positive-2: torchrun --nnodes 2 --node-rank 1 pointed at a master that is not there: the
            client socket times out connecting (DistNetworkError).
positive-3: torchrun c10d rendezvous with --nnodes 2 and one node: RendezvousTimeoutError.
positive-4: srun --label, 2 tasks while WORLD_SIZE=4 is exported: rank 0's in-process store
            waits for ranks 2-3 that were never launched.
negative-1: a rendezvous that completes after a slow node joins, then trains normally.

    .venv/bin/python scripts/examples/rendezvous-timeout.py
"""

import subprocess
import sys
import time

from _runner import (
    SRUN_EPILOGUE,
    TORCHRUN,
    free_port,
    labeled,
    launch_env,
    torchrun_console,
    write_log,
    write_worker,
)

WORKER = r'''
import datetime, logging, os, time
import torch, torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
log.info("rank %s/%s connecting to %s:%s", os.environ["RANK"], os.environ["WORLD_SIZE"],
         os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "1800"))))
rank = dist.get_rank()
for step in range(1, 4):
    t = torch.ones(4) * rank
    dist.all_reduce(t)
    log.info("step %d loss %.4f", step, 2.0 / step)
dist.destroy_process_group()
'''


def late_master(port: int) -> str:
    """Node 1 starts first and retries its store connection; node 0 arrives 14 s later and the
    job trains normally. Returns node 1's console (the retry warnings, then healthy steps)."""
    script = write_worker(WORKER)
    args = ["--nnodes", "2", "--nproc-per-node", "2", "--tee", "3", "--master-addr", "127.0.0.1",
            "--master-port", str(port), "--rdzv-conf", "timeout=10"]
    node1 = subprocess.Popen([str(TORCHRUN), *args, "--node-rank", "1", str(script)], cwd=script.parent,
                             env=launch_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(14)
    node0 = subprocess.Popen([str(TORCHRUN), *args, "--node-rank", "0", str(script)], cwd=script.parent,
                             env=launch_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, _ = node1.communicate(timeout=120)
    node0.wait(timeout=60)
    return out


if __name__ == "__main__":
    ID = "rendezvous-timeout"
    if sys.argv[1:] == ["negative"]:
        write_log(ID, "negative-1.log", late_master(free_port()))
        sys.exit()
    port = free_port()
    common = ["--nproc-per-node", "2", "--tee", "3", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nnodes", "2", "--node-rank", "0", "--rdzv-conf", "timeout=20", *common]))
    write_log(ID, "positive-2.log", torchrun_console(WORKER, ["--nnodes", "2", "--node-rank", "1", "--rdzv-conf", "timeout=20", *common]))
    write_log(ID, "positive-3.log", torchrun_console(WORKER, ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                                                 "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", "job-4417",
                                                 "--rdzv-conf", "join_timeout=20"]))
    write_log(ID, "positive-4.log", labeled(WORKER, 2, "{rank}: ", env={"PG_TIMEOUT": "20"},
                                       per_rank_env={0: {"WORLD_SIZE": "4"}, 1: {"WORLD_SIZE": "4"}},
                                       epilogue=SRUN_EPILOGUE))
    write_log(ID, "negative-1.log", late_master(free_port()))
