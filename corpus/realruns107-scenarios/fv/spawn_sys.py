"""DDP training started with torch.multiprocessing.spawn; optional native-buffer bug on one rank."""
import argparse, os, time, ctypes, faulthandler
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=43420)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--fault", default="none", choices=["none", "badfree", "segv"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=17)
p.add_argument("--faulthandler", action="store_true")


class NativeBatchPacker:
    """Pretend wrapper around a C packing routine that owns its scratch buffer."""
    def __init__(self, n):
        self.libc = ctypes.CDLL("libc.so.6")
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.scratch = ctypes.create_string_buffer(n)

    def release(self):
        # bug: buffer is owned by Python (ctypes), not by malloc -> must not be freed by libc
        self.libc.free(ctypes.addressof(self.scratch) + 16)


def worker(rank, args):
    if args.faulthandler:
        faulthandler.enable()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world, timeout=timedelta(seconds=20))
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    packer = NativeBatchPacker(4096)
    for step in range(args.steps):
        x = torch.randn(64, 32); y = torch.randint(0, 4, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if args.fault == "badfree" and rank == args.fault_rank and step == args.fault_step:
            packer.release()
        if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
            ctypes.memmove(ctypes.create_string_buffer(8), 0, 8)
        if step % 10 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(0.02)
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.world, join=True)
