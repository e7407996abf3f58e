"""Classic torch.save / torch.load checkpointing (per-rank files, rank-0 full files, safetensors).
Runs single-process (plain python), under torch.multiprocessing.spawn (--spawn N) or under torchrun."""
import argparse, os, sys, time, logging, warnings, math
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", required=True)
p.add_argument("--resume", default=None, help="path of checkpoint file, or 'per-rank'")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--save-every", type=int, default=3)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=30070)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--two-groups", action="store_true")
p.add_argument("--store-config", action="store_true", help="store argparse config object in ckpt")
p.add_argument("--scheduler", default="none", choices=["none", "onecycle", "lambda"])
p.add_argument("--save-scheduler-object", action="store_true")
p.add_argument("--per-rank", action="store_true", help="every rank writes ckpt_rank{r}.pt")
p.add_argument("--name-from-config", action="store_true")
p.add_argument("--sanitize-name", action="store_true")
p.add_argument("--strict", type=int, default=1)
p.add_argument("--new-head", action="store_true")
p.add_argument("--format", default="pt", choices=["pt", "safetensors"])
p.add_argument("--timestamps", action="store_true")
p.add_argument("--pidfile", default=None)
args = p.parse_args()

class Net(nn.Module):
    def __init__(self, hidden, new_head=False):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, 4)
        if new_head:
            self.aux_head = nn.Linear(hidden, 2)
    def forward(self, x):
        return self.head(self.encoder(x))

def worker(rank, world):
    if world > 1:
        if "RANK" not in os.environ:
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
            dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
        else:
            dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    if args.pidfile:
        open(f"{args.pidfile}.{rank}", "w").write(str(os.getpid()))
    if args.timestamps:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}/{world}] %(message)s")
        log = logging.getLogger("train").info
    else:
        log = lambda m: print(f"rank {rank}: {m}", flush=True)
    torch.manual_seed(0)
    model = Net(args.hidden, args.new_head)
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    ps = list(model.parameters())
    if args.two_groups:
        opt = torch.optim.SGD([{"params": ps[:4], "lr": 0.05}, {"params": ps[4:], "lr": 0.01}], momentum=0.9)
    else:
        opt = torch.optim.SGD(ps, lr=0.05, momentum=0.9)
    sched = None
    total = args.steps
    if args.scheduler == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=total)
    elif args.scheduler == "lambda":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / total)))
    start = 0
    if args.resume:
        path = os.path.join(args.ckpt_dir, f"ckpt_rank{rank}.pt") if args.resume == "per-rank" else args.resume
        log(f"loading checkpoint {path}")
        if args.format == "safetensors":
            from safetensors.torch import load_file
            sd = load_file(path)
            res = model.load_state_dict(sd, strict=bool(args.strict))
        else:
            ck = torch.load(path, map_location="cpu")
            res = model.load_state_dict(ck["model"], strict=bool(args.strict))
            if not args.new_head:
                opt.load_state_dict(ck["optim"])
            if sched is not None and "sched" in ck:
                sched.load_state_dict(ck["sched"])
            start = ck["step"]
        log(f"load_state_dict: {res}")
        log(f"resumed from step {start}")
    os.makedirs(args.ckpt_dir, exist_ok=True)
    g = torch.Generator().manual_seed(1000 + rank)
    for step in range(start, start + args.steps):
        x = torch.randn(16, 16, generator=g); y = torch.randint(0, 4, (16,), generator=g)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if sched is not None:
            sched.step()
        lr = opt.param_groups[0]["lr"]
        log(f"step {step} loss {loss.item():.4f} lr {lr:.5f}")
        time.sleep(0.2)
        if (step + 1) % args.save_every == 0:
            if args.name_from_config:
                tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items()))
                if args.sanitize_name:
                    tag = tag.replace("/", "-")
                fname = f"ckpt_step{step+1}_{tag}.pt"
            else:
                fname = f"ckpt_rank{rank}.pt" if args.per_rank else "last.pt"
            path = os.path.join(args.ckpt_dir, fname)
            if args.per_rank or rank == 0:
                if args.format == "safetensors":
                    from safetensors.torch import save_file
                    save_file(model.state_dict(), path.replace(".pt", ".safetensors"))
                else:
                    ck = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step + 1}
                    if sched is not None:
                        ck["sched"] = sched if args.save_scheduler_object else sched.state_dict()
                    if args.store_config:
                        ck["config"] = args
                    torch.save(ck, path)
                log(f"saved {path}")
            if world > 1:
                dist.barrier()
    log("finished")
    if world > 1:
        dist.destroy_process_group()

if __name__ == "__main__":
    if "RANK" in os.environ:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    elif args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn)
    else:
        worker(0, 1)
