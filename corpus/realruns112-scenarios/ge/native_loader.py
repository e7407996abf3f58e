"""DDP training whose input augmentation runs in a small native library
(native/lib/libfastaug.so, plain C) loaded with ctypes, or in a torch C++
extension linked against it.

  --mode ctypes      ctypes.CDLL("libfastaug.so"), found through LD_LIBRARY_PATH
  --mode ext         load_inline extension linked with -lfastaug (needs the loader to find it)
  --scratch          use the library's scratch buffer (fastaug_alloc) for the copy
  --launcher spawn   torch.multiprocessing.spawn instead of an external launcher
"""
import argparse, ctypes, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="ctypes", choices=["ctypes", "ext"])
p.add_argument("--scratch", action="store_true")
p.add_argument("--launcher", default="env", choices=["env", "spawn"])
p.add_argument("--nproc", type=int, default=2)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--port", default="44320")
args = p.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
LIBDIR = os.path.join(os.path.dirname(HERE), "native", "lib")

EXT_SRC = r"""
#include <torch/extension.h>
extern "C" void fastaug_jitter(float *buf, int64_t n, float scale);
torch::Tensor jitter(torch::Tensor x, double scale) {
  auto y = x.contiguous().clone();
  fastaug_jitter(y.data_ptr<float>(), y.numel(), (float)scale);
  return y;
}
"""


def get_augment(rank):
    if args.mode == "ctypes":
        lib = ctypes.CDLL("libfastaug.so")
        lib.fastaug_jitter.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_float]
        lib.fastaug_jitter.restype = None
        lib.fastaug_copy_in.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        lib.fastaug_version.restype = ctypes.c_double
        print(f"[rank{rank}] libfastaug {lib.fastaug_version():.1f} loaded", flush=True)

        def aug(x):
            x = x.contiguous().clone()
            if args.scratch:
                ws = lib.fastaug_alloc(ctypes.c_int64(x.numel() * 64))
                lib.fastaug_copy_in(ws, x.data_ptr(), x.numel())
                lib.fastaug_jitter(ws, x.numel(), 0.05)
                lib.fastaug_copy_in(x.data_ptr(), ws, x.numel())
                lib.fastaug_free(ws)
            else:
                lib.fastaug_jitter(x.data_ptr(), x.numel(), 0.05)
            return x
        return aug
    from torch.utils.cpp_extension import load_inline
    ext = load_inline("fastaug_ext", cpp_sources=EXT_SRC, functions=["jitter"],
                      extra_ldflags=[f"-L{LIBDIR}", "-lfastaug"])
    return lambda x: ext.jitter(x, 0.05)


def worker(rank, world):
    if args.launcher == "spawn":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    aug = get_augment(rank)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        x = aug(torch.randn(512, 128, generator=g))
        y = torch.randint(0, 10, (512,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    print(f"[rank{rank}] finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.launcher == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.nproc,), nprocs=args.nproc, join=True)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
