"""Parameter server with torch.distributed.rpc: rank 0 hosts the PS, ranks 1..N-1 are trainers.
Launched with torch.multiprocessing.spawn (or torchrun with --torchrun)."""
import argparse, os, sys, time, threading, logging, signal
import torch, torch.nn as nn
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=2)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--port", default="34650")
p.add_argument("--rpc-timeout", type=float, default=10.0)
p.add_argument("--torchrun", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(message)s", stream=sys.stdout)
log = logging.getLogger("ps")

class ParameterServer:
    def __init__(self, in_dim=20, hid=32):
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Linear(in_dim, hid), nn.ReLU(), nn.Linear(hid, 2))
        self.lock = threading.Lock()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.n_updates = 0
    def get_weights(self):
        with self.lock:
            return {k: v.clone() for k, v in self.model.state_dict().items()}
    def push_grads(self, worker, grads):
        with self.lock:
            if args.fault == "slow_ps" and self.n_updates >= args.fault_step:
                time.sleep(8)   # PS thread stuck behind a blocking checkpoint upload
            for prm, g in zip(self.model.parameters(), grads):
                prm.grad = g if prm.grad is None else prm.grad + g
            self.opt.step(); self.opt.zero_grad()
            self.n_updates += 1
            return self.n_updates

def ps_get(rref): return rref.local_value().get_weights()
def ps_push(rref, worker, grads): return rref.local_value().push_grads(worker, grads)

def trainer(rank, ps_rref):
    hid = 32
    if args.fault == "width" and rank == args.fault_rank:
        hid = 48   # trainer started from an older experiment config
    torch.manual_seed(rank)
    local = nn.Sequential(nn.Linear(20, hid), nn.ReLU(), nn.Linear(hid, 2))
    for step in range(args.steps):
        w = rpc.rpc_sync("ps", ps_get, args=(ps_rref,))
        if hid == 32:
            local.load_state_dict(w)
        x = torch.randn(16, 20); y = (x.sum(1) > 0).long()
        loss = nn.functional.cross_entropy(local(x), y)
        local.zero_grad(); loss.backward()
        grads = [p.grad for p in local.parameters()]
        if args.fault == "local_fn" and rank == args.fault_rank and step >= args.fault_step:
            def clip_and_push(rref, worker, grads):   # helper defined inside the loop
                return ps_push(rref, worker, [g.clamp(-1, 1) for g in grads])
            n = rpc.rpc_sync("ps", clip_and_push, args=(ps_rref, f"trainer{rank}", grads))
        else:
            n = rpc.rpc_sync("ps", ps_push, args=(ps_rref, f"trainer{rank}", grads))
        log.info(f"trainer{rank} step {step} loss {loss.item():.4f} ps_updates={n}")
        if os.environ.get("PS_PIDFILE") and rank == 0: pass
        time.sleep(0.1)

def run(rank, world):
    if not args.torchrun:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=args.rpc_timeout, init_method="env://")
    name = "ps" if rank == 0 else f"trainer{rank}"
    rpc.init_rpc(name, rank=rank, world_size=world, rpc_backend_options=opts)
    log.info(f"{name} joined rpc group (world={world})")
    if rank == 0:
        if os.environ.get("PS_PIDFILE"):
            open(os.environ["PS_PIDFILE"], "w").write(str(os.getpid()))
        ps_rref = rpc.RRef(ParameterServer())
        futs = [rpc.rpc_async(f"trainer{r}", trainer, args=(r, ps_rref), timeout=0) for r in range(1, world)]
        for f in futs: f.wait()
        log.info("all trainers done; ps_updates=%d", ps_rref.local_value().n_updates)
    rpc.shutdown()
    log.info(f"{name} shut down cleanly")

if __name__ == "__main__":
    if args.torchrun:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        mp.spawn(run, args=(args.world,), nprocs=args.world, join=True)
