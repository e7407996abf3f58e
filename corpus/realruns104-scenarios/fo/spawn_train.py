"""Single-node DDP via torch.multiprocessing.spawn (gloo, CPU), logging with timestamps; healthy with noisy warnings."""
import os, sys, time, logging, argparse, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def worker(rank, world, args):
    logging.basicConfig(level=logging.INFO, format=f'%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s', force=True)
    log = logging.getLogger('spawn_train')
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1'); os.environ.setdefault('MASTER_PORT', str(args.port))
    dist.init_process_group('gloo', rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    model = model.to(memory_format=torch.channels_last)
    ddp = DDP(model, find_unused_parameters=True)   # copied from a config that had a frozen branch
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        x = torch.randn(8, 3, 16, 16, generator=g).to(memory_format=torch.channels_last)
        y = torch.randint(0, 10, (8,), generator=g)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 and rank == 0:
            log.info(f"step {step} loss {loss.item():.4f} grad_norm {torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1e9).item():.3f}")
        time.sleep(0.1)
    if rank == 0:
        sd = ddp.state_dict()   # saved with the DDP 'module.' prefix
        torch.save(sd, os.path.join(args.out, 'spawn_ckpt.pt'))
        log.info("saved checkpoint spawn_ckpt.pt")
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()

if __name__ == '__main__':
    p = argparse.ArgumentParser(); p.add_argument('--steps', type=int, default=25); p.add_argument('--port', type=int, default=42970)
    p.add_argument('--out', default='/work/rr104/fo/ckpt'); p.add_argument('--nprocs', type=int, default=2)
    args = p.parse_args(); os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
