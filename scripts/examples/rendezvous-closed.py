#!/usr/bin/env python
"""Regenerate the examples of `rendezvous-closed` with a real two-"node" torchrun job on CPU.

Node 0 (hosts the c10d rendezvous store) runs with --max-restarts 3; node 1 runs with
--max-restarts 0. Rank 1 on node 1 fails at step 5 (a data shard that is not there); node 1's
agent has no restarts left, so it shuts down and *closes* the rendezvous. Node 0's worker loses
its peer (gloo `Connection closed by peer`), node 0's agent tries to restart the worker group,
re-enters the rendezvous and gets RendezvousClosedError.

positive-1: node 0's console only (what the user of that node sees).
negative-1: both consoles `srun --label` style: node 1's FileNotFoundError is the root cause.

    .venv/bin/python scripts/examples/rendezvous-closed.py
"""

from _runner import node_console, srun_labelled, two_nodes, write_log

WORKER = r'''
import datetime, logging, os, time
import torch, torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank()
for step in range(1, 40):
    if os.environ.get("EXAMPLE_NODE") == "1" and step == 5:
        shard = "data/train/shard-00017.bin"
        log.info("opening %s", shard)
        open(shard, "rb")
    t = torch.ones(1024) * step
    dist.all_reduce(t)
    time.sleep(0.4)
    log.info("step %d loss %.4f", step, 3.0 / step)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "rendezvous-closed"
    # node 0 may restart its worker group 3 times, node 1 not at all
    lines = two_nodes(WORKER, "ft-llama-0193", stagger=1.5,
                      node_env={0: {"EXAMPLE_NODE": "0"}, 1: {"EXAMPLE_NODE": "1"}},
                      node_args={0: ["--max-restarts", "3"], 1: ["--max-restarts", "0"]})
    write_log(ID, "positive-1.log", node_console(lines, 0))
    write_log(ID, "negative-1.log", srun_labelled(lines))
