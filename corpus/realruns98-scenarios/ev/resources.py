"""Resource limits hit by DataLoader workers: /dev/shm size, open-file limit.

--mode shm|fds|none
"""
import argparse, datetime, logging, os, sys, time
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

log = logging.getLogger("pipeline")


class Crops(Dataset):
    """Synthetic image crops with several per-sample auxiliary tensors (masks, boxes, ...)."""
    def __init__(self, n, size, n_aux):
        self.n, self.size, self.n_aux = n, size, n_aux

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, self.size, self.size, generator=g)
        aux = {f"aux{k}": torch.rand(4, generator=g) for k in range(self.n_aux)}
        return {"image": img, "label": i % 10, **aux}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--n-aux", type=int, default=0)
    p.add_argument("--bs", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--sharing", default=None)
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--prefetch", type=int, default=2)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    if args.sharing:
        torch.multiprocessing.set_sharing_strategy(args.sharing)
    log.info(f"rank {rank}: sharing strategy {torch.multiprocessing.get_sharing_strategy()}, "
             f"RLIMIT_NOFILE={__import__('resource').getrlimit(__import__('resource').RLIMIT_NOFILE)}")
    ds = Crops(4096, args.size, args.n_aux)
    sampler = DistributedSampler(ds) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.bs, shuffle=sampler is None, sampler=sampler,
                    num_workers=args.workers, prefetch_factor=args.prefetch)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    it = dl
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(dl, total=args.steps, desc=f"train r{rank}", dynamic_ncols=False, ncols=100)
    held = []
    for step, batch in enumerate(it):
        out = model(batch["image"])
        loss = nn.functional.cross_entropy(out, batch["label"])
        opt.zero_grad(); loss.backward(); opt.step()
        # keep the aux targets of recent batches for the running box-metric
        held.append([v for k, v in batch.items() if k.startswith("aux")])
        if step % 10 == 0 and not args.tqdm:
            log.info(f"step {step} loss {loss.item():.4f}")
        if step + 1 >= args.steps:
            break
    log.info("done")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
