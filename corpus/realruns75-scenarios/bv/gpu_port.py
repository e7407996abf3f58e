"""Toy DDP training script "ported" from a GPU cluster to a CPU box.

--fault selects which GPU-era leftover is active, --fault-rank / --fault-step where it bites.
"""
import argparse, datetime, logging, os, sys, time, warnings
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "cuda_device", "dot_cuda", "set_device", "nccl", "ddp_device_ids",
                        "div_device_count", "half_input", "amp_healthy", "pin_memory", "default_device",
                        "cuda_sync", "sdpa_efficient", "cuda_env_index", "premul_hook", "premul_manual", "cuda_generator",
                        "scaler_fp16"])
p.add_argument("--fault-rank", type=int, default=-1, help="-1: all ranks")
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--logfmt", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
local_rank = int(os.environ.get("LOCAL_RANK", 0))
faulty = args.fault_rank < 0 or args.fault_rank == rank

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.logfmt == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


class Net(nn.Module):
    def __init__(self, attn=False):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.attn = attn
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        if self.attn:
            q = h.view(h.shape[0], 2, 4, 4)
            h = nn.functional.scaled_dot_product_attention(q, q, q).reshape(h.shape[0], 32)
        return self.out(h)


# ---------------- setup (the part people copy from GPU scripts) ----------------
backend = "nccl" if (args.fault == "nccl" and faulty) else "gloo"
if world > 1:
    say(f"init_process_group backend={backend} world_size={world}")
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout))

device = torch.device("cpu")
if args.fault == "cuda_device" and faulty:
    device = torch.device("cuda", local_rank)
if args.fault == "set_device" and faulty:
    torch.cuda.set_device(local_rank)
if args.fault == "div_device_count" and faulty:
    # "one GPU per process" mapping copied from the cluster launcher script
    gpu = local_rank % torch.cuda.device_count()
    device = torch.device("cuda", gpu)
if args.fault == "default_device" and faulty:
    torch.set_default_device(os.environ.get("DEFAULT_DEVICE", "cuda"))
if args.fault == "cuda_env_index" and faulty:
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    say(f"CUDA_VISIBLE_DEVICES={vis!r}")
    device = torch.device(f"cuda:{vis.split(',')[local_rank]}")

say(f"torch {torch.__version__} cuda_available={torch.cuda.is_available()} device_count={torch.cuda.device_count()} device={device}")

torch.manual_seed(0)
model = Net(attn=(args.fault == "sdpa_efficient"))
if args.fault == "dot_cuda" and faulty:
    model = model.cuda()
else:
    model = model.to(device)
if args.fault == "half_input" and faulty:
    model = model.half()  # "fp16 weights to save memory", from the GPU config

manual_sync = args.fault == "premul_manual"
if world > 1 and not manual_sync:
    if args.fault == "ddp_device_ids" and faulty:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank], output_device=local_rank)
    else:
        model = nn.parallel.DistributedDataParallel(model)
    if args.fault == "premul_hook" and faulty:
        # gradient-averaging comm hook from the NCCL codebase: pre-scale by 1/world inside the all-reduce
        def premul_allreduce_hook(state, bucket):
            t = bucket.buffer()
            fut = dist.all_reduce(t, op=dist._make_nccl_premul_sum(1.0 / world), async_op=True).get_future()
            return fut.then(lambda f: f.value()[0])
        model.register_comm_hook(None, premul_allreduce_hook)

use_amp = args.fault == "amp_healthy"
scaler = torch.cuda.amp.GradScaler(enabled=True) if use_amp else None
if args.fault == "scaler_fp16":
    # "CPU fallback" of the fp16 recipe: AMP scaler on the cpu device, weights kept in half precision
    model = model.half()
    use_amp = True
    scaler = torch.amp.GradScaler("cpu")
opt = torch.optim.SGD(model.parameters(), lr=0.05)

g = torch.Generator().manual_seed(1)
X = torch.randn(512, 16, generator=g)
Y = (X[:, :4].argmax(1))
ds = TensorDataset(X, Y)
if args.fault == "cuda_generator" and faulty:
    gen = torch.Generator(device=os.environ.get("SPLIT_DEVICE", "cuda")).manual_seed(42)
    ds, val_ds = torch.utils.data.random_split(ds, [448, 64], generator=gen)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
pin = args.fault == "pin_memory"
dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                pin_memory=pin, persistent_workers=args.workers > 0)

it = range(args.steps)
if args.logfmt == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", file=sys.stderr, mininterval=0, ncols=90)

step = 0
data_iter = iter(dl)
for step in it:
    try:
        xb, yb = next(data_iter)
    except StopIteration:
        if sampler is not None:
            sampler.set_epoch(step)
        data_iter = iter(dl)
        xb, yb = next(data_iter)
    xb = xb.to(device, non_blocking=pin)
    yb = yb.to(device, non_blocking=pin)
    if args.fault == "cuda_sync" and faulty and step == args.fault_step:
        torch.cuda.synchronize()  # timing code copied from the GPU profiler helper
    if args.fault == "sdpa_efficient" and faulty and step == args.fault_step:
        from torch.nn.attention import sdpa_kernel, SDPBackend
        ctx = sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
    else:
        import contextlib
        ctx = contextlib.nullcontext()
    with ctx:
        if use_amp:
            with (torch.autocast("cpu", dtype=torch.float16) if args.fault == "scaler_fp16" else torch.cuda.amp.autocast()):
                out = model(xb)
                loss = nn.functional.cross_entropy(out, yb)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            out = model(xb)
            loss = nn.functional.cross_entropy(out, yb)
            loss.backward()
            if manual_sync:
                # hand-rolled gradient averaging from the NCCL code path (no DDP wrapper)
                for prm in model.parameters():
                    dist.all_reduce(prm.grad, op=dist._make_nccl_premul_sum(1.0 / world))
            opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 5 == 0 or step == args.steps - 1:
        acc = (out.argmax(1) == yb).float().mean().item()
        if args.logfmt == "tqdm" and rank == 0:
            it.set_postfix(loss=f"{loss.item():.4f}", acc=f"{acc:.2f}")
        elif args.logfmt != "tqdm":
            say(f"step {step:3d} loss {loss.item():.4f} acc {acc:.3f}")
    time.sleep(0.05)

say(f"training done after {step + 1} steps")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
