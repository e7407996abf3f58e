"""Evaluation script: load a trained checkpoint and evaluate it on a held-out set (optionally sharded
across ranks with torchrun). --fault selects a bug in the eval code; --ckpt/--key select the artefact."""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(__file__))
from common_model import Classifier, TrainConfig  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--ckpt", default="/work/rr124/hg/out/ckpt/model.pt")
p.add_argument("--key", default=None, help="sub-dict of the checkpoint holding the weights")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--n-eval", type=int, default=2000)
p.add_argument("--bs", type=int, default=50)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--progress", action="store_true")
p.add_argument("--use-logging", action="store_true")
p.add_argument("--in-dim", type=int, default=32)
args = p.parse_args()

distributed = "WORLD_SIZE" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1

if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
log = logging.getLogger(f"eval.rank{rank}")


def say(m):
    (log.info(m) if args.use_logging else print(f"[eval rank {rank}] {m}", flush=True))


say(f"loading checkpoint {args.ckpt}")
if args.ckpt.endswith(".safetensors"):
    from safetensors.torch import load_file
    sd = load_file(args.ckpt)
else:
    sd = torch.load(args.ckpt, map_location="cpu")
if args.key:
    sd = sd[args.key]
model = Classifier(d_in=32)
model.load_state_dict(sd)
model.eval()
say(f"model loaded: {sum(p.numel() for p in model.parameters())} parameters")

W = torch.randn(32, 5, generator=torch.Generator().manual_seed(7))
X = torch.randn(args.n_eval, args.in_dim, generator=torch.Generator().manual_seed(123))
Y = (X[:, :32] @ W).argmax(1) if args.in_dim >= 32 else torch.zeros(args.n_eval, dtype=torch.long)
ds = TensorDataset(X, Y)
sampler = DistributedSampler(ds, shuffle=False, drop_last=args.fault == "gather-uneven") if distributed else None
if args.fault == "gather-uneven" and distributed:
    # "fast path": each rank evaluates its own contiguous slice, last rank gets the remainder
    per = args.n_eval // world + 1
    idx = list(range(rank * per, min((rank + 1) * per, args.n_eval)))
    ds = torch.utils.data.Subset(ds, idx)
    sampler = None
dl = DataLoader(ds, batch_size=args.bs, sampler=sampler)
it = dl
if args.progress:
    from tqdm import tqdm
    it = tqdm(dl, desc=f"eval[r{rank}]", position=rank, dynamic_ncols=False, ncols=90)

correct, total, all_logits = 0, 0, []
ctx = torch.inference_mode() if args.fault == "inference-backward" else torch.no_grad()
with ctx:
    for i, (x, y) in enumerate(it):
        logits = model(x)
        all_logits.append(logits)
        correct += (logits.argmax(1) == y).sum().item()
        total += len(y)
        if args.sleep:
            time.sleep(args.sleep)
        if not args.progress and (i + 1) % 10 == 0:
            say(f"batch {i+1}/{len(dl)} running_acc={correct/total:.4f}")

say(f"local accuracy {correct/total:.4f} on {total} samples")

if args.fault == "inference-backward" and rank == args.fault_rank:
    # test-time adaptation: entropy minimisation on the collected logits
    say("test-time adaptation: 1 step of entropy minimisation")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    logits = torch.cat(all_logits)
    ent = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1).mean()
    ent.backward()
    opt.step()

if distributed:
    local = torch.cat(all_logits)
    if args.fault == "gather-uneven":
        gathered = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(gathered, local)
    else:
        t = torch.tensor([correct, total], dtype=torch.float64)
        dist.all_reduce(t)
        correct, total = int(t[0]), int(t[1])
    dist.barrier()
say(f"final accuracy {correct/total:.4f} ({correct}/{total})")
if distributed:
    dist.destroy_process_group()
