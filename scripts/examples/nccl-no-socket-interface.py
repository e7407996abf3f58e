#!/usr/bin/env python
"""Regenerate the real (gloo) example of `nccl-no-socket-interface`.

Multi-node launch scripts usually pin both NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the
data-network interface. When the name does not exist on the host (a different NIC name on a
new node type, inside a container), gloo fails at process-group creation exactly like NCCL's
`Bootstrap : no socket interface found`. This script runs a real 2-rank torchrun job with
GLOO_SOCKET_IFNAME set to an interface that does not exist here.

    .venv/bin/python scripts/examples/nccl-no-socket-interface.py
"""

from _runner import torchrun_console, write_log

WORKER = r'''
import logging, os
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
log.info("NCCL_SOCKET_IFNAME=%s GLOO_SOCKET_IFNAME=%s", os.environ.get("NCCL_SOCKET_IFNAME"),
         os.environ.get("GLOO_SOCKET_IFNAME"))
dist.init_process_group("gloo")
log.info("process group ready: rank %d/%d", dist.get_rank(), dist.get_world_size())
'''

if __name__ == "__main__":
    ID = "nccl-no-socket-interface"
    write_log(ID, "positive-3.log", torchrun_console(WORKER, ["--nproc-per-node", "2", "--tee", "3"],
                                        env={"NCCL_SOCKET_IFNAME": "ens5f0", "GLOO_SOCKET_IFNAME": "ens5f0"}))
