"""DDP trainer run under PYTHONFAULTHANDLER / -X faulthandler, plain logging with timestamps.
Faults: native crash in a ctypes-wrapped helper; a rank that stalls before a monitored_barrier; a rank killed from outside."""
import argparse, ctypes, faulthandler, logging, os, signal, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "native_crash", "stall", "selfkill"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=4)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--dump-after", type=float, default=0)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("fh_train")
log.info("faulthandler enabled=%s", faulthandler.is_enabled())

def pack_tokens(buf_addr, n):
    # fast path: read the token buffer handed back by the C tokenizer via its raw address
    return ctypes.string_at(buf_addr, n)

def sync_point(tag):
    dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)

dist.init_process_group("gloo", timeout=timedelta(seconds=45))
if args.dump_after:
    faulthandler.dump_traceback_later(args.dump_after, exit=False)
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(20, 40), nn.Tanh(), nn.Linear(40, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(args.steps):
    x = torch.randn(32, 20); y = x[:, :1] * 2
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    log.info("step=%d loss=%.4f", step, loss.item())
    if step == args.fault_step and rank == args.fault_rank:
        if args.fault == "native_crash":
            addr = 0x10  # tokenizer handle already freed for an empty document (dangling small pointer)
            log.info("packing %d tokens from C buffer at 0x%x", 64, addr)
            pack_tokens(addr, 64)
        elif args.fault == "stall":
            log.info("waiting for eval results file from the evaluator ...")
            while not os.path.exists("/work/rr89/dr/out/eval_done.flag"):
                time.sleep(1)
        elif args.fault == "selfkill":
            pass
    if step == args.fault_step:
        log.info("entering epoch-end sync")
        sync_point("epoch_end")
    time.sleep(0.3)
dist.barrier()
log.info("finished")
dist.destroy_process_group()
