"""DDP training with real bugs/misconfigurations that no usual failure class covers. --fault picks one."""
import argparse, os, sys, time, json, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", required=True)
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--out", default="/work/rr53/e/tmp/fout")
p.add_argument("--config", default="")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29720)
p.add_argument("--replicas", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()

class Net(nn.Module):
    def __init__(self, sparse=False, width=32):
        super().__init__()
        self.emb = nn.Embedding(100, width, sparse=sparse)
        self.backbone = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))
        self.head = nn.Linear(width, 4)
        self.norm = nn.BatchNorm1d(width) if args.fault == "bn" else nn.Identity()
        self.act_fn = lambda t: torch.nn.functional.gelu(t)  # local lambda attribute
    def forward(self, x):
        return self.head(self.act_fn(self.norm(self.backbone(self.emb(x).mean(1)))))

def run(rank, world):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
    log = logging.getLogger("trainer")
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    cfg = {"lr": 1e-3, "freeze": [], "width": 32}
    if args.config:
        with open(args.config) as f:
            cfg.update(json.load(f))
    log.info("config: %s", cfg)
    torch.manual_seed(0)
    X = torch.randint(0, 100, (482 if args.fault == "bn" else 480, 6)); Y = X[:, 0] % 4
    ds = TensorDataset(X, Y)
    nrep = args.replicas if args.fault == "sampler" else world
    sampler = DistributedSampler(ds, num_replicas=nrep, rank=rank) if world > 1 else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None)
    model = Net(sparse=(args.fault == "sparse"), width=cfg["width"])
    for name, prm in model.named_parameters():
        if any(name.startswith(f) or f in name for f in cfg["freeze"]):
            prm.requires_grad_(False)
    ntrain = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log.info("trainable params: %d", ntrain)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=cfg["lr"])
    sched = None
    if args.fault == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=len(dl) * 2)  # bug: 2 instead of args.epochs
    lossf = nn.CrossEntropyLoss(); step = 0
    for epoch in range(args.epochs):
        if sampler: sampler.set_epoch(epoch)
        for xb, yb in dl:
            loss = lossf(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            if sched: sched.step()
            step += 1
            if step % 5 == 0:
                log.info("epoch %d step %d loss %.4f lr %.3g", epoch, step, loss.item(), opt.param_groups[0]["lr"])
            if args.fault == "avg" and step == args.fault_step:
                t = torch.tensor([loss.item()])
                dist.all_reduce(t, op=dist.ReduceOp.AVG)
                log.info("mean loss across ranks %.4f", t.item())
            if step == args.fault_step and rank == args.fault_rank and args.fault in ("savemodel", "fsize"):
                os.makedirs(args.out, exist_ok=True)
                path = os.path.join(args.out, f"step{step}.pt")
                log.info("saving checkpoint to %s", path)
                if args.fault == "savemodel":
                    torch.save(model.module if world > 1 else model, path)
                else:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
            if args.fault == "lock" and step == args.fault_step:
                from filelock import FileLock
                lock = FileLock(os.path.join(args.out, "eval_cache.lock"), timeout=5)
                os.makedirs(args.out, exist_ok=True)
                if rank == 0:
                    with lock:
                        log.info("building eval cache")
                        time.sleep(15)
                else:
                    time.sleep(1.0)  # rank 0 takes the lock first
                    log.info("waiting for eval cache lock")
                    with lock:
                        log.info("eval cache ready")
            if step >= args.steps: break
        if step >= args.steps: break
    log.info("done, %d steps", step)
    if world > 1: dist.barrier()

def spawn_main(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn)
    else:
        run(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
