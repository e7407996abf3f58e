"""Tiny classifier trained with torch.multiprocessing.spawn (or single process) on gloo.
--fault picks a real bug on --fault-rank at --fault-step."""
import argparse, os, sys, time, datetime, logging, warnings
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--port", type=int, default=33500)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--tqdm", action="store_true")

class Feats(Dataset):
    def __init__(self, n=256, seed=0, transform=None):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 20, generator=g); self.y = (self.x[:, 0] > 0).long()
        self.transform = transform
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.transform is not None: x = self.transform(x)
        return x, self.y[i]

def run(rank, args):
    world = args.nprocs
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s.%(msecs)03d %(levelname)-7s [%(processName)s rank={rank}] %(name)s - %(message)s", datefmt="%H:%M:%S")
    log = logging.getLogger("trainer")
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    transform = None
    if args.fault == "lambda-transform":
        scale = 1.0 / 3.0
        transform = lambda t: t * scale      # normalisation closure, fine with fork, not with spawn workers
    ds = Feats(seed=rank, transform=transform)
    mp_ctx = "spawn" if args.workers > 0 else None
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers, multiprocessing_context=mp_ctx)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    step = 0
    it = dl
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"epoch 0", mininterval=0, file=sys.stderr)
    log.info(f"start training: world={world} samples={len(ds)} lr={args.lr}")
    for epoch in range(100):
        for x, y in it:
            if step >= args.steps: break
            if args.fault == "label-shift" and rank == args.fault_rank and step == args.fault_step:
                y = y + 1            # labels re-mapped 1..2 by a preprocessing change on this shard
            if args.fault == "float-target" and rank == args.fault_rank and step == args.fault_step:
                y = y.float()
            out = model(x)
            if args.fault == "inplace-probs" and rank == args.fault_rank and step >= args.fault_step:
                probs = out.softmax(-1)
                probs.clamp_(min=1e-4)          # "numerical safety" added in place on softmax output
                loss = nn.functional.nll_loss(probs.log(), y)
            else:
                loss = lossf(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            if args.step_sleep: time.sleep(args.step_sleep)
            if step % 2 == 0 and (rank == 0 or args.fault != "none"):
                log.info(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            if not torch.isfinite(loss):
                log.error(f"loss is {loss.item()} at step {step}; stopping")
                raise FloatingPointError(f"Loss became non-finite ({loss.item()}) at step {step}")
            step += 1
        if step >= args.steps: break
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info("done")

if __name__ == "__main__":
    args = p.parse_args()
    warnings.filterwarnings("default")
    if args.nprocs == 1:
        run(0, args)
    else:
        mp.spawn(run, args=(args,), nprocs=args.nprocs, join=True)
