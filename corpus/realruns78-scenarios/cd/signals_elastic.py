"""Preemption-aware DDP training: SIGTERM handler that checkpoints and exits 0, resume from the
latest checkpoint (torchrun --max-restarts), rank 0 loads and broadcasts the checkpoint.
Works as plain `python` (world of 1) or under torchrun.
"""
import argparse, json, logging, os, signal, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--step-time", type=float, default=0.3)
p.add_argument("--ckpt-dir", default="/tmp/rr78cd_sig/ckpt")
p.add_argument("--ckpt-every", type=int, default=5)
p.add_argument("--vocab", default="")
p.add_argument("--vocab-rank", type=int, default=1)
p.add_argument("--vocab-step", type=int, default=7)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format=f"%(asctime)s [%(levelname)s] r{rank}/a{attempt} %(message)s")
log = logging.getLogger("trainer")

stop = {"sig": None}


def on_term(signum, frame):
    stop["sig"] = signum
    log.warning("received %s, will checkpoint at the end of this step and exit", signal.Signals(signum).name)


signal.signal(signal.SIGTERM, on_term)

if world > 1:
    # per-attempt key prefix so a restarted group does not read the previous attempt's gloo addresses
    base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                         timeout=timedelta(seconds=30))
    dist.init_process_group("gloo", store=dist.PrefixStore(f"attempt{attempt}", base), rank=rank,
                            world_size=world, timeout=timedelta(seconds=30))
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(48, 96), nn.Tanh(), nn.Linear(96, 1))
model = DDP(net) if world > 1 else net
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
os.makedirs(args.ckpt_dir, exist_ok=True)
latest = os.path.join(args.ckpt_dir, "latest.pt")


def save(step):
    if rank == 0:
        tmp = latest + ".tmp"
        torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
        os.replace(tmp, latest)
        log.info("checkpoint saved: %s (step %d)", latest, step)


start = 0
if os.path.exists(latest):
    obj = [None]
    if rank == 0:
        log.info("found %s, resuming", latest)
        ck = torch.load(latest, map_location="cpu")
        obj = [ck]
    if world > 1:
        dist.broadcast_object_list(obj, src=0)
    ck = obj[0]
    net.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"]); start = ck["step"]
    log.info("resumed at step %d", start)

vocab = None
g = torch.Generator().manual_seed(rank * 1000 + start)
w_true = torch.linspace(-1, 1, 48)
for step in range(start, args.steps):
    if args.vocab and rank == args.vocab_rank and step == args.vocab_step and vocab is None:
        with open(args.vocab) as f:  # special-token map on the shared volume
            vocab = json.load(f)
        log.info("loaded %d special tokens from %s", len(vocab), args.vocab)
    x = torch.randn(64, 48, generator=g); y = (x @ w_true).unsqueeze(1) + 0.1 * torch.randn(64, 1, generator=g)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    time.sleep(args.step_time)
    l = loss.detach().clone()
    flag = torch.tensor([1.0 if stop["sig"] else 0.0])
    if world > 1:
        dist.all_reduce(l); l /= world
        dist.all_reduce(flag)
    if rank == 0:
        log.info("step %d loss %.5f", step + 1, l.item())
    if flag.item() > 0:
        save(step + 1)
        log.info("exiting cleanly after preemption notice (step %d)", step + 1)
        if world > 1:
            dist.barrier(); dist.destroy_process_group()
        sys.exit(0)
    if (step + 1) % args.ckpt_every == 0:
        save(step + 1)
if world > 1:
    dist.barrier()
log.info("training complete")
if world > 1:
    dist.destroy_process_group()
