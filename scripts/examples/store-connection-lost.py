#!/usr/bin/env python
"""Regenerate the examples of `store-connection-lost` with real two-"node" torchrun jobs on CPU.

Two torchrun agents join one c10d rendezvous on this machine (node 0 hosts the TCPStore,
node 1 connects to it), each running one gloo worker.

positive-1: node 0's agent is SIGKILLed mid-training (host lost / agent OOM-killed): node 1's
            console, the only log the user has, shows keep-alive failures, `Failed to recv, got 0
            bytes ... Did the remote server shutdown or crash?`, `Broken pipe` and
            RendezvousConnectionError.
negative-1: rank 0 on node 0 fails with a real error (embedding index out of range): node 0's
            agent exits and takes the store with it, so node 1 shows the same store errors, but
            the root cause is rank 0's IndexError. Both consoles, `srun --label` style.

    .venv/bin/python scripts/examples/store-connection-lost.py
"""

from _runner import node_console, srun_labelled, two_nodes, write_log

WORKER = r'''
import datetime, logging, os, time
import torch, torch.distributed as dist, torch.nn as nn

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
emb = nn.Embedding(32000, 16)
for step in range(1, 30):
    ids = torch.randint(0, 32000, (4, 8))
    if os.environ.get("EXAMPLE_MODE") == "crash-rank0" and rank == 0 and step == 6:
        ids[0, 3] = 32003  # a token id past the vocabulary
    loss = emb(ids).pow(2).mean()
    t = torch.ones(1024) * loss.detach()
    dist.all_reduce(t)
    time.sleep(0.4)
    log.info("step %d loss %.4f", step, t[0].item() / dist.get_world_size())
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "store-connection-lost"
    # node 0 hosts the store; its agent is killed 12 s into training
    lines = two_nodes(WORKER, "pretrain-7b-0412", env={"EXAMPLE_MODE": "train"}, kill_node0_after=12)
    write_log(ID, "positive-1.log", node_console(lines, 1))
    lines = two_nodes(WORKER, "pretrain-7b-0412", env={"EXAMPLE_MODE": "crash-rank0"})
    write_log(ID, "negative-1.log", srun_labelled(lines))
