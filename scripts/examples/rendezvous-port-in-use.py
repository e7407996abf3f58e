"""Regenerate real examples for rendezvous-port-in-use (CPU, torchrun + gloo).

positive-1.log: a leftover process (here a plain socket) still listens on 29701; a new
  `torchrun --nproc-per-node 2 --master-port 29701` cannot create its TCPStore.
positive-2.log: a script that calls init_process_group("gloo", init_method="tcp://...")
  itself (no launcher) while another job's store holds the port.
negative-1.log: only the IPv6 wildcard [::]:29703 is taken (a v6-only listener) and
  TORCH_CPP_LOG_LEVEL=INFO: the store logs "Failed to bind to ipv6 address, trying ipv4.
  Error: The server socket has failed to listen ... EADDRINUSE", binds IPv4 and the job
  runs to the end - the same words in a harmless context.

Run: .venv/bin/python scripts/examples/rendezvous-port-in-use.py
"""

from __future__ import annotations

import socket

from _runner import PY, TORCHRUN, run_logged

ID = "rendezvous-port-in-use"

TRAIN = r'''
import datetime, os, sys
import torch
import torch.distributed as dist

if len(sys.argv) > 1:
    dist.init_process_group("gloo", init_method=sys.argv[1], rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=60))
else:
    dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(4) * (rank + 1)
dist.all_reduce(t)
print(f"rank {rank}: all_reduce ok -> {t.tolist()}", flush=True)
dist.destroy_process_group()
'''


def hold(port: int, family: int = socket.AF_INET, v6only: bool = False) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    if v6only:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", port))
    s.listen(1)
    return s


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    with hold(29701, socket.AF_INET6, v6only=False):
        run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29701", "train.py"],
                   files=files)
    with hold(29702, socket.AF_INET6, v6only=False):
        run_logged(ID, "positive-2.log", [PY, "train.py", "tcp://127.0.0.1:29702"], files=files)
    with hold(29703, socket.AF_INET6, v6only=True):
        run_logged(ID, "negative-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29703", "train.py"],
                   files=files, env={"TORCH_CPP_LOG_LEVEL": "INFO"})
