"""Standalone c10d TCPStore used as the rendezvous store of the simulated cluster (agents use is_host=0)."""
import argparse, time
from datetime import timedelta
import torch.distributed as dist
p = argparse.ArgumentParser(); p.add_argument("--port", type=int); p.add_argument("--seconds", type=int, default=120)
a = p.parse_args()
store = dist.TCPStore("127.0.0.1", a.port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
print(f"rendezvous store listening on 127.0.0.1:{a.port}", flush=True)
time.sleep(a.seconds)
print("store host exiting", flush=True)
