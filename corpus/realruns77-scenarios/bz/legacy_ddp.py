"""Legacy-style DDP training script (written the way 2019-2022 tutorials did it),
run against current torch/numpy. --fault selects which old idiom is exercised."""
import argparse, os, sys, time, logging, datetime

pre = argparse.ArgumentParser(add_help=False)
pre.add_argument("--fault", default="none")
pre_args, _ = pre.parse_known_args()

parser = argparse.ArgumentParser(description="legacy ddp trainer")
parser.add_argument("--fault", default="none")
parser.add_argument("--fault-rank", type=int, default=-1)
parser.add_argument("--fault-step", type=int, default=3)
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--launcher", default="env", choices=["env", "launch", "spawn", "single", "envonly"])
parser.add_argument("--nprocs", type=int, default=2)
parser.add_argument("--port", type=int, default=35850)
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--use-logging", action="store_true")
parser.add_argument("--tqdm", action="store_true")
parser.add_argument("--ckpt", default="/work/rr77/bz/work/ckpt.pt")
parser.add_argument("--resume", default="")
parser.add_argument("--save", default="")
if pre_args.fault == "local_rank_arg":
    # old tutorial: only the underscore spelling, torch.distributed.launch used to pass it
    parser.add_argument("--local_rank", type=int, required=True)
    args = parser.parse_args()
else:
    parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    args = parser.parse_args()

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

if args.fault == "torch_six":
    from torch._six import inf  # used by the old clip_grad helper below
else:
    inf = float("inf")
if args.fault == "collections_abc":
    import collections


class ToyDataset(Dataset):
    def __init__(self, n=512, d=16, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, d, generator=g)
        w = torch.randn(d, generator=g)
        self.y = (self.x @ w > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i].numpy()
        if args.fault == "np_int_worker":
            label = np.asarray(self.y[i].item(), dtype=np.int)
        else:
            label = np.asarray(self.y[i].item(), dtype=np.int64)
        return torch.from_numpy(x), torch.from_numpy(label)


class Net(nn.Module):
    def __init__(self, d=16, h=64):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, h)
        self.head = nn.Linear(h, 2)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def clip_grad_norm_old(parameters, max_norm, norm_type=2):
    # copy of the pre-1.5 helper many repos vendored
    parameters = [p for p in parameters if p.grad is not None]
    if norm_type == inf:
        total = max(p.grad.abs().max() for p in parameters)
    else:
        total = torch.norm(torch.stack([torch.norm(p.grad.detach(), norm_type) for p in parameters]), norm_type)
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for p in parameters:
            p.grad.detach().mul_(coef)
    return total


def flatten_metrics(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, collections.Mapping):  # pre-3.10 spelling
            out.update(flatten_metrics(v, prefix + k + "/"))
        else:
            out[prefix + k] = v
    return out


def get_logger(rank):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s - %(levelname)s - %(name)s - [rank%(rank)s] %(message)s")
        base = logging.getLogger("train")
        return logging.LoggerAdapter(base, {"rank": rank})
    class P:
        def info(self, m): print(f"[rank{rank}] {m}", flush=True)
        warning = info
    return P()


def run(rank, world):
    log = get_logger(rank)
    if args.launcher != "single":
        if args.fault == "env_missing":
            dist.init_process_group(backend="gloo", init_method="env://",
                                    timeout=datetime.timedelta(seconds=30))
        else:
            dist.init_process_group(backend="gloo", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=30))
        log.info(f"initialized process group: backend={dist.get_backend()} world_size={dist.get_world_size()}")
    torch.manual_seed(0)
    writer = None
    if args.fault == "tensorboard" and rank == 0:
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(log_dir="/work/rr77/bz/work/runs")
    if args.fault == "apex":
        from apex import amp
        from apex.parallel import DistributedDataParallel as ApexDDP
    if args.fault == "cuda_device":
        torch.cuda.set_device(args.local_rank)
        device = torch.device("cuda", args.local_rank)
    else:
        device = torch.device("cpu")
    model = Net()
    if args.fault == "cuda_model":
        model = model.cuda()
    start_epoch = 0
    if args.resume:
        log.info(f"=> loading checkpoint '{args.resume}'")
        if args.fault == "pickled_class":
            ckpt = torch.load(args.resume, weights_only=False)
            model = ckpt
        else:
            ckpt = torch.load(args.resume, map_location="cpu")
            sd = ckpt["state_dict"] if isinstance(ckpt, dict) and "state_dict" in ckpt else ckpt
            model.load_state_dict(sd)
            start_epoch = ckpt.get("epoch", 0) if isinstance(ckpt, dict) else 0
            log.info(f"=> loaded checkpoint '{args.resume}' (epoch {start_epoch}, best_acc {ckpt.get('best_acc')})")
    if args.launcher != "single":
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if args.fault == "amp_old":
        scaler = torch.cuda.amp.GradScaler()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    ds = ToyDataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if args.launcher != "single" else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=args.workers)
    it = dl
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, total=min(args.steps, len(dl)), desc=f"epoch {start_epoch}", dynamic_ncols=False, ncols=90)
    running = 0.0
    step = 0
    for epoch in range(start_epoch, start_epoch + args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in it:
            step += 1
            x, y = x.to(device), y.to(device)
            if args.fault == "amp_old":
                with torch.cuda.amp.autocast():
                    out = model(x)
                    loss = F.cross_entropy(out, y)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                out = model(x)
                loss = F.cross_entropy(out, y)
                opt.zero_grad()
                loss.backward()
                clip_grad_norm_old(model.parameters(), 1.0)
                opt.step()
            opt.zero_grad()
            hit = (args.fault_rank in (-1, rank)) and step == args.fault_step
            if args.fault == "np_float" and hit:
                # metric accumulator written for numpy<1.24
                running += np.float(loss.item())
            else:
                running += float(loss.item())
            if args.fault == "collections_abc" and hit:
                m = flatten_metrics({"train": {"loss": running / step, "lr": opt.param_groups[0]["lr"]}, "step": step})
                log.info(f"metrics {m}")
            acc = (out.argmax(1) == y).float().mean().item()
            if args.fault == "np_inf" and hit:
                # early-stopping tracker from the old utils/early_stop.py, only the main rank keeps it
                best_val = np.Inf
                log.info(f"early stopping: best={best_val} current={loss.item():.4f}")
            if not (args.tqdm and rank == 0):
                log.info(f"epoch {epoch} step {step}/{args.steps} loss {loss.item():.4f} acc {acc:.3f} lr {opt.param_groups[0]['lr']:.4f}")
            time.sleep(0.15)
            if step >= args.steps:
                break
        sched.step()
    if args.save and rank == 0:
        core = model.module if hasattr(model, "module") else model
        if args.fault == "save_whole":
            torch.save(core, args.save)
        elif args.fault == "save_prefixed":
            torch.save({"epoch": epoch + 1, "state_dict": model.state_dict(), "best_acc": round(acc, 4)}, args.save)
        elif args.fault == "save_numpy":
            torch.save({"epoch": epoch + 1, "state_dict": core.state_dict(), "best_acc": np.float64(acc),
                        "args": args}, args.save)
        else:
            torch.save({"epoch": epoch + 1, "state_dict": core.state_dict()}, args.save)
        log.info(f"saved checkpoint to {args.save}")
    if args.launcher != "single":
        dist.barrier()
        dist.destroy_process_group()
    log.info(f"training finished: avg loss {running / max(step, 1):.4f}")


def spawn_entry(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    run(rank, world)


if __name__ == "__main__":
    if args.launcher == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.nprocs,), nprocs=args.nprocs, join=True)
    elif args.launcher == "single":
        run(0, 1)
    elif args.fault == "env_missing":
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
