"""Parameter server over torch.distributed.rpc, launched with torch.multiprocessing.spawn."""
import argparse, os, sys, time, threading, warnings
from datetime import timedelta
import torch, torch.nn as nn
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "slow-ps"])
p.add_argument("--world", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--at-step", type=int, default=4)
p.add_argument("--rpc-timeout", type=float, default=5.0)
p.add_argument("--port", default="45380")
a = p.parse_args()

class PS:
    def __init__(self, fault):
        self.model = nn.Linear(20, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.lock = threading.Lock(); self.fault = fault; self.updates = 0
    def get(self):
        return {k: v.clone() for k, v in self.model.state_dict().items()}
    def push(self, grads):
        with self.lock:
            for p_, g in zip(self.model.parameters(), grads):
                p_.grad = g
            self.opt.step(); self.updates += 1
            if self.fault == "slow-ps" and self.updates == 8:
                # checkpoint the PS synchronously every 8 updates, on a slow network disk
                torch.save(self.model.state_dict(), "/tmp/gu_ps.pt")
                time.sleep(12)
        return self.updates

_ps = None
def ps_get(): return _ps.get()
def ps_push(grads): return _ps.push(grads)

def run(rank, a):
    global _ps
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = a.port
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=a.rpc_timeout)
    name = "ps" if rank == 0 else f"trainer{rank}"
    if rank == 0:
        _ps = PS(a.fault)
    rpc.init_rpc(name, rank=rank, world_size=a.world, rpc_backend_options=opts)
    if rank != 0:
        torch.manual_seed(rank)
        local = nn.Linear(20, 1)
        w_true = torch.randn(20, 1)
        for step in range(a.steps):
            local.load_state_dict(rpc.rpc_sync("ps", ps_get))
            x = torch.randn(64, 20); y = x @ w_true
            loss = nn.functional.mse_loss(local(x), y)
            local.zero_grad(); loss.backward()
            n = rpc.rpc_sync("ps", ps_push, args=([p_.grad for p_ in local.parameters()],))
            print(f"{name} step {step} loss {loss.item():.4f} ps_updates {n}", flush=True)
    rpc.shutdown()
    print(f"{name} shut down cleanly", flush=True)

if __name__ == "__main__":
    warnings.filterwarnings("default")
    mp.spawn(run, args=(a,), nprocs=a.world, join=True)
