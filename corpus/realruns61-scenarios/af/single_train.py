"""Single-process / mp.spawn classifier trainer with DataLoader workers and selectable faults."""
import argparse, os, sys, time, logging, datetime, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps-per-epoch", type=int, default=200)
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--fault", default="none")
p.add_argument("--fault-step", type=int, default=700)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--replicas", type=int, default=0)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--port", type=int, default=30480)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("trainer")

class Synth(Dataset):
    def __init__(s, n, fault):
        s.n = n; s.fault = fault
        s.labels = {i: i % 10 for i in range(n)}
    def __len__(s): return s.n
    def __getitem__(s, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(32, generator=g)
        if s.fault == "dl-key" and i == 1337:
            s.labels.pop(i)  # dedup pass in preprocessing removed this id
        return x, s.labels[i]

class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.backbone = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64)); s.cls = nn.Linear(64, 10)
    def forward(s, x): return s.cls(F.relu(s.backbone(x)))

def main(rank=0, world=1):
    if world > 1:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0); torch.set_num_threads(1)
    ds = Synth(args.steps_per_epoch * 16 * max(world, 1), args.fault)
    sampler = None
    if world > 1:
        sampler = DistributedSampler(ds, num_replicas=args.replicas or world, rank=rank)
    dl = DataLoader(ds, batch_size=16, shuffle=sampler is None, sampler=sampler, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    model = Net()
    if args.fault == "freeze-all":
        # meant to freeze only the backbone for linear probing
        for n, prm in model.named_parameters():
            if n.startswith("backbone") or n.startswith("cls"): prm.requires_grad_(False)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD([q for q in model.parameters() if q.requires_grad], lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    step = 0
    for ep in range(args.epochs):
        if sampler is not None: sampler.set_epoch(ep)
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", mininterval=0.3)
        if args.fault == "warn-sched" and ep == 0:
            sched.step()  # warmup tick
        for x, y in it:
            out = model(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 5 == 0:
                log.info(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f} acc {(out.argmax(1)==y).float().mean().item():.3f}")
            step += 1
            if args.fault == "slow": time.sleep(0.01)
        sched.step()
        log.info(f"[rank{rank}] epoch {ep} done, lr {sched.get_last_lr()[0]:.4f}")
    log.info(f"[rank{rank}] finished training")
    if world > 1:
        import torch.distributed as dist
        dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
