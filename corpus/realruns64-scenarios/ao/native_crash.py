"""Native crash in one rank: SIGSEGV (ctypes null deref), SIGABRT (abort in native code),
SIGBUS (mmap'ed shard truncated underneath), stack overflow in deep recursion."""
import os, sys, ctypes, mmap, signal
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *
import numpy as np


def main_worker(rank, world, args):
    if args.mode != "env":
        init_dist(args.timeout, rank, world, args.port)
    else:
        rank, world = init_dist(args.timeout)
    log = setup_logger(rank, args.logstyle)
    log(f"initialized process group backend=gloo world_size={world}")

    shard = None
    if args.fault == "bus":
        # every rank maps its own cached feature shard with np.memmap
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"feat_cache_rank{rank}.npy")
        np.save(path, np.random.rand(4096, 64).astype("float32"))
        shard = np.load(path, mmap_mode="r")
        log(f"memory-mapped feature cache {path} shape={shard.shape}")

    def hook(step):
        if rank != args.fault_rank or step != args.fault_step:
            if shard is not None:
                _ = float(shard[(step * 37) % shard.shape[0]].sum())
            return
        if args.fault == "segv":
            # a "fast path" reading a C buffer whose pointer was never set (NULL)
            libc = ctypes.CDLL(None)
            name_ptr = ctypes.c_char_p(None)
            log(f"step {step}: reading native batch buffer via ctypes")
            libc.strlen(name_ptr)
        elif args.fault == "abort":
            log(f"step {step}: flushing native metrics writer")
            libc = ctypes.CDLL(None)
            libc.abort()
        elif args.fault == "pyabort":
            os.abort()
        elif args.fault == "bus":
            # cache "refresh" truncates the file that is still memory-mapped
            log(f"step {step}: refreshing feature cache {path}")
            with open(path, "r+b") as f:
                f.truncate(0)
            _ = float(shard[(step * 37) % shard.shape[0]].sum())
        elif args.fault == "recursion":
            sys.setrecursionlimit(10**7)
            def walk(node, depth=0):
                return walk(node, depth + 1) + 1
            log(f"step {step}: walking config tree")
            walk({})
    if args.fault == "worker-segv":
        import common
        class DecodingDataset(common.SynthDataset):
            """samples go through a native 'decoder' (ctypes) in the DataLoader worker"""
            def __getitem__(self, i):
                x, y = super().__getitem__(i)
                if rank == args.fault_rank and i % 97 == 13:
                    libc = ctypes.CDLL(None)
                    libc.strlen(ctypes.c_char_p(None))   # decoder returned NULL for a bad record
                return x, y
        common.SynthDataset = DecodingDataset
    train(args, rank, world, hook, log)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    p = base_parser()
    p.add_argument("--mode", default="env", choices=["env", "spawn"])
    args = p.parse_args()
    if args.mode == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(main_worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
    else:
        main_worker(None, None, args)
