"""DDP / collective fault scenarios on gloo. Flags select the fault, rank and step."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
a = p.parse_args()

if a.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
def say(msg):
    if a.logging: log.info(msg)
    else: print(msg, flush=True)

def setup():
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))

class Net(nn.Module):
    def __init__(self, hidden=32, aux=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 4)
        self.aux_head = nn.Linear(hidden, 4) if aux else None
    def forward(self, x, use_aux=False):
        h = self.body(x)
        if use_aux and self.aux_head is not None:
            return self.aux_head(h)
        return self.head(h)

class CkptNet(Net):
    def forward(self, x, use_aux=False):
        from torch.utils.checkpoint import checkpoint
        h = self.body[0](x)
        h = checkpoint(self.body[1:], h, use_reentrant=True)
        return self.head(h)

def main():
    setup()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    if a.fault == "init_twice":
        # a helper that "makes sure" the group is up, called again from the trainer
        dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
    hidden = 32
    if a.fault == "model_mismatch" and rank == a.rank:
        hidden = 48   # this rank read a stale config
    aux = a.fault in ("unused", "aux_find_unused")
    model = CkptNet(hidden) if a.fault == "ckpt_reentrant" else Net(hidden, aux=aux)
    kw = {}
    if a.fault == "ckpt_reentrant": kw["find_unused_parameters"] = True
    if a.fault == "aux_find_unused": kw["find_unused_parameters"] = True
    if a.fault == "static_graph_healthy":
        kw.update(static_graph=True, gradient_as_bucket_view=True, broadcast_buffers=False)
    ddp = DDP(model, **kw)
    say(f"[rank{rank}] DDP ready world={world} params={sum(p.numel() for p in model.parameters())}")
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    nsteps = a.steps
    if a.fault in ("join", "join_local_metrics") and rank == a.rank:
        nsteps = a.steps - 3   # this shard has fewer batches
    it = range(nsteps)
    if a.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", mininterval=0)

    def loop():
        for step in it:
            x = torch.randn(8, 16, generator=g); y = torch.randint(0, 4, (8,), generator=g)
            if a.fault == "straggler" and rank == a.rank and step == a.step:
                say(f"[rank{rank}] step {step}: loading next shard from remote store ...")
                time.sleep(a.timeout + 25)
            if a.fault == "sigkill" and rank == a.rank and step == a.step:
                import signal
                os.kill(os.getpid(), signal.SIGKILL)   # stands in for kernel OOM kill
            if a.fault == "alloc" and rank == a.rank and step == a.step:
                import resource
                resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))
                cache = torch.empty(int(6e9) // 4)   # eval cache sized from dataset length
            out = ddp(x)
            loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step(); opt.zero_grad()
            if a.fault == "shape_desync" and step == a.step:
                # metric reduction: each rank reduces its own per-class counts
                ncls = 4 if rank != a.rank else 5
                counts = torch.zeros(ncls)
                dist.all_reduce(counts)
            if a.fault == "monitored" and step == a.step:
                if rank == a.rank:
                    say(f"[rank{rank}] writing eval predictions ...")
                    time.sleep(a.timeout + 30)
                dist.monitored_barrier(timeout=timedelta(seconds=10))
            l = loss.detach().clone()
            if a.fault != "join_local_metrics":
                dist.all_reduce(l); l /= world
            if rank == 0:
                say(f"step {step} loss {l.item():.4f} lr 0.05")
    if a.fault in ("join", "join_local_metrics"):
        from torch.distributed.algorithms.join import Join
        with Join([ddp]):
            loop()
    else:
        loop()
    dist.barrier()
    say(f"[rank{rank}] training done")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
