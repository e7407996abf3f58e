#!/usr/bin/env python
"""Regenerate the examples of `gloo-connection-closed` with real gloo jobs on CPU.

positive-1: two torchrun "nodes" (c10d rendezvous on this machine); rank 0 on node 0 fails;
            the log is node 1's console only, as a user with per-node logs has it: gloo's
            `Connection closed by peer ... typically caused by a remote worker crashing`.
positive-2: 4 ranks started pdsh-style (`node-1: ` prefixes, as the deepspeed launcher prints);
            rank 0 on node 0 is SIGKILLed mid all_reduce; only node 1's lines are kept.
negative-1: the full picture of positive-1's run (both nodes, `srun --label`): rank 0's own
            IndexError is in the log, so the gloo lines on rank 1 are collateral.

    .venv/bin/python scripts/examples/gloo-connection-closed.py
"""

from _runner import labeled, node_console, srun_labelled, two_nodes, write_log

WORKER = r'''
import datetime, logging, os, signal, time
import torch, torch.distributed as dist, torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
emb = nn.Embedding(32000, 16)
for step in range(1, 30):
    ids = torch.randint(0, 32000, (4, 8))
    if rank == 0 and step == 6:
        if os.environ.get("EXAMPLE_MODE") == "sigkill-rank0":
            os.kill(os.getpid(), signal.SIGKILL)  # what the kernel OOM killer does
        ids[0, 3] = 32003  # a token id past the vocabulary
    loss = emb(ids).pow(2).mean()
    t = torch.ones(1 << 16) * loss.detach()
    dist.all_reduce(t)
    time.sleep(0.4)
    log.info("step %d loss %.4f", step, t[0].item() / dist.get_world_size())
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "gloo-connection-closed"
    lines = two_nodes(WORKER, "sft-run-17")
    write_log(ID, "positive-1.log", node_console(lines, 1))
    write_log(ID, "negative-1.log", srun_labelled(lines))
    pdsh = labeled(WORKER, 4, "{host}: ", env={"EXAMPLE_MODE": "sigkill-rank0"})
    write_log(ID, "positive-2.log", "".join(l for l in pdsh.splitlines(keepends=True) if l.startswith("node-1: ")))
