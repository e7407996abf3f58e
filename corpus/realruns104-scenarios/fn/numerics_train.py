"""Small classifier trained on CPU with bf16 autocast / low precision, gradient clipping and
loss scaling. Single process, torchrun, or accelerate launch (--accelerate).

--fault:
  none            healthy; uses deprecated torch.cpu.amp.autocast / torch.cuda.amp.GradScaler, clips grads
  autocast-proj   projection head applied outside the autocast region to bf16 features
  sqrt-norm       feature-norm regulariser sqrt(sum(h^2)) on zero (padding) rows, anomaly detection on
  unstable-sm     hand-written softmax exp(z)/sum(exp(z)) with unnormalised inputs and high lr,
                  clip_grad_norm_(error_if_nonfinite=True)
  fp16-scaler     model cast to .half() and trained with GradScaler
  bf16-svd        pure bf16 model with a spectral-norm penalty (torch.linalg.svdvals)
"""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--input-scale", type=float, default=1.0, help="raw feature scale (no normalisation)")
p.add_argument("--accelerate", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--timestamps", action="store_true")
p.add_argument("--anomaly", action="store_true")
args = p.parse_args()

if args.timestamps:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s | %(message)s")
log = logging.getLogger("numerics")
say = log.info if args.timestamps else (lambda m: print(m, flush=True))

if args.anomaly:
    torch.autograd.set_detect_anomaly(True)

accelerator = None
if args.accelerate:
    from accelerate import Accelerator
    accelerator = Accelerator(mixed_precision="bf16", cpu=True)
    rank, world = accelerator.process_index, accelerator.num_processes
elif "RANK" in os.environ:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

torch.manual_seed(0)
torch.set_num_threads(1)
faulty = args.fault_rank in (-1, rank)


class Classifier(nn.Module):
    def __init__(self, d_in=20, d=48, n_cls=6):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d_in, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
        self.proj = nn.Parameter(torch.randn(n_cls, d) * d ** -0.5)
        self.bias = nn.Parameter(torch.zeros(n_cls))

    def features(self, x):
        return self.enc(x)

    def head(self, h):
        return F.linear(h, self.proj, self.bias)

    def forward(self, x, mask):
        h = self.features(x) * mask[:, None].to(x.dtype)
        return h, self.head(h)


model = Classifier()
if args.fault == "fp16-scaler" and faulty:
    model = model.half()
if args.fault == "bf16-svd":
    model = model.to(torch.bfloat16)  # pure-bf16 training to halve memory
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

ddp = None
if accelerator is not None:
    model, opt = accelerator.prepare(model, opt)
elif world > 1:
    model = nn.parallel.DistributedDataParallel(model)
core = model.module if hasattr(model, "module") else model

if args.fault == "none":
    scaler = torch.cuda.amp.GradScaler()          # old API, CUDA-only
elif args.fault == "fp16-scaler":
    scaler = torch.amp.GradScaler("cpu")
else:
    scaler = None

g = torch.Generator().manual_seed(7 + rank)
W = torch.randn(20, 6, generator=g)
scale_in = args.input_scale


def batch(step):
    x = torch.randn(64, 20, generator=g)
    y = (x @ W).argmax(1)
    if faulty and step >= args.fault_step:
        x = x * scale_in  # later shards were exported without normalisation
    mask = torch.ones(64)
    if args.fault == "sqrt-norm":
        x[-8:] = 0.0  # padded rows of the last, incomplete bucket
        mask[-8:] = 0.0
    return x, y, mask


it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc=f"epoch 0", ncols=100)

for step in it:
    x, y, mask = batch(step)
    if args.fault == "fp16-scaler" and faulty:
        x = x.half()
    if args.fault == "bf16-svd":
        x = x.bfloat16()
    opt.zero_grad(set_to_none=True)
    if args.fault == "none":
        ctx = torch.cpu.amp.autocast(dtype=torch.bfloat16)  # deprecated spelling
    else:
        ctx = torch.autocast("cpu", dtype=torch.bfloat16,
                             enabled=args.fault in ("autocast-proj", "sqrt-norm"))
    with ctx:
        if args.fault == "autocast-proj":
            h = core.features(x)
        else:
            h, logits = model(x, mask)
    if args.fault == "autocast-proj":
        # head kept in fp32 "for stability", outside autocast
        logits = core.head(h)
    if args.fault == "unstable-sm":
        e = torch.exp(logits)
        probs = e / e.sum(-1, keepdim=True)
        loss = -torch.log(probs[torch.arange(len(y)), y]).mean()
    else:
        loss = F.cross_entropy(logits.float(), y)
    if args.fault == "sqrt-norm":
        hn = torch.sqrt((h.float() * h.float()).sum(-1))
        loss = loss + 1e-3 * (hn - 1.0).pow(2).mean()
    if args.fault == "bf16-svd" and faulty and step >= args.fault_step:
        sv = torch.linalg.svdvals(core.enc[2].weight)
        loss = loss + 1e-2 * sv.max()
    if not torch.isfinite(loss):
        (log.warning if args.timestamps else say)(f"rank {rank} step {step}: non-finite loss {loss.item()}")
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
    elif accelerator is not None:
        accelerator.backward(loss)
    else:
        loss.backward()
    if args.fault == "unstable-sm":
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    else:
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if scaler is not None:
        scaler.step(opt)
        scaler.update()
    else:
        opt.step()
    acc = (logits.argmax(1) == y).float().mean().item()
    msg = f"rank {rank} step {step} loss {loss.item():.4f} acc {acc:.3f} grad_norm {gn.item():.3f}"
    if args.tqdm and rank == 0:
        it.set_postfix(loss=f"{loss.item():.4f}", gn=f"{gn.item():.2f}")
        if step % 5 == 0:
            it.write(msg)
    else:
        say(msg)
    time.sleep(0.05)

if accelerator is not None:
    accelerator.wait_for_everyone()
    accelerator.end_training()
elif world > 1:
    dist.barrier()
    dist.destroy_process_group()
say(f"rank {rank} finished {args.steps} steps")
