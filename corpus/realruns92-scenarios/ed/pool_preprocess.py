"""Preprocess token shards with a process pool, then train a small model in the parent.
--pool mp (multiprocessing.Pool) | futures (concurrent.futures.ProcessPoolExecutor)
--fault none | segv (native reader dereferences a NULL record pointer on a damaged shard) | exit (native reader calls exit(3) on a damaged shard)
"""
import argparse, ctypes, faulthandler, multiprocessing as mp, os, sys, time
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--pool", default="mp")
p.add_argument("--fault", default="none")
p.add_argument("--bad-shard", type=int, default=5)
p.add_argument("--shards", type=int, default=12)
p.add_argument("--workers", type=int, default=3)
p.add_argument("--faulthandler", action="store_true")
p.add_argument("--timeout", type=int, default=40)
args = p.parse_args()
if args.faulthandler:
    faulthandler.enable()

libc = ctypes.CDLL(None)


def read_shard(i):
    if args.faulthandler:
        faulthandler.enable()
    rng = np.random.default_rng(i)
    toks = (rng.zipf(1.3, size=200_000) % 512).astype(np.int64)
    header_ptr = 0 if i == args.bad_shard else ctypes.addressof(ctypes.create_string_buffer(b"SHRD", 16))
    if args.fault == "segv":
        ctypes.string_at(header_ptr)  # header pointer of a damaged shard is NULL
    elif args.fault == "exit" and header_ptr == 0:
        libc.exit(3)  # the native reader gives up on the damaged shard
    counts = np.bincount(toks, minlength=512)
    time.sleep(0.3)
    print(f"[pid {os.getpid()}] shard {i:02d}: {len(toks)} tokens", flush=True)
    return counts


def main():
    t0 = time.time()
    print(f"preprocessing {args.shards} shards with {args.workers} workers ({args.pool})", flush=True)
    if args.pool == "mp":
        with mp.Pool(args.workers) as pool:
            res = pool.map_async(read_shard, range(args.shards)).get(timeout=args.timeout)
    else:
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(args.workers) as ex:
            res = list(ex.map(read_shard, range(args.shards)))
    counts = np.sum(res, axis=0)
    print(f"unigram table built in {time.time() - t0:.1f}s, {int(counts.sum())} tokens", flush=True)
    import torch
    torch.manual_seed(0)
    logp = torch.log(torch.tensor(counts, dtype=torch.float32) + 1)
    model = torch.nn.Linear(512, 512)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(50):
        x = torch.randn(32, 512)
        loss = ((model(x) - logp) ** 2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
