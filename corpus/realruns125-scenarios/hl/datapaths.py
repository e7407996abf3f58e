"""Family: data / checkpoint paths in a DDP run.
Each rank reads its own shard directory  <data-root>/rank<k>/part-*.npy  and writes checkpoints
to --out-dir. Launch either under torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
  --init-from PATH   warm start from a checkpoint file
  --keep-open        dataset keeps every part file open (lazy mmap-style reader)
"""
import argparse, glob, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from _core import setup_logging, TinyNet


def make_parser():
    p = argparse.ArgumentParser()
    p.add_argument("--data-root", default="data")
    p.add_argument("--out-dir", default="ckpt")
    p.add_argument("--init-from", default=None)
    p.add_argument("--keep-open", action="store_true")
    p.add_argument("--manifest", default=None, help="e.g. {root}/rank{rank}.txt")
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=46083)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--workers", type=int, default=0)
    return p


class ShardDataset(Dataset):
    def __init__(self, root, rank, keep_open=False, manifest=None):
        if manifest:
            with open(manifest.format(root=root, rank=rank)) as mf:
                self.files = [os.path.join(root, l.strip()) for l in mf if l.strip()]
        else:
            self.files = sorted(glob.glob(os.path.join(root, f"rank{rank}", "part-*.npy")))
        self.keep_open = keep_open
        self.handles = []
        self.index = []
        for fi, f in enumerate(self.files):
            if keep_open:
                fh = open(f, "rb")
                self.handles.append(fh)
                arr = np.load(fh, mmap_mode=None, allow_pickle=False)
            else:
                arr = np.load(f)
            for j in range(arr.shape[0]):
                self.index.append((fi, j))
            if not keep_open:
                del arr
        self.cache = {}

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        fi, j = self.index[i]
        if fi not in self.cache:
            self.cache[fi] = np.load(self.files[fi])
        row = self.cache[fi][j]
        return torch.from_numpy(row[:-1]).float(), int(row[-1])


def worker(local_rank, args, world):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=local_rank, world_size=world, timeout=timedelta(seconds=30))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    log = setup_logging(rank)
    log.info("rank %d/%d reading %s", rank, dist.get_world_size(), os.path.join(args.data_root, f"rank{rank}"))
    model = TinyNet()
    if args.init_from:
        log.info("warm start from %s", args.init_from)
        sd = torch.load(args.init_from, map_location="cpu")
        model.load_state_dict(sd["model"])
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ds = ShardDataset(args.data_root, rank, keep_open=args.keep_open, manifest=args.manifest)
    log.info("dataset: %d files, %d samples", len(ds.files), len(ds))
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers, drop_last=True)
    os.makedirs(args.out_dir, exist_ok=True)
    step = 0
    for ep in range(args.epochs):
        for xb, yb in dl:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if step % 5 == 0:
                log.info("epoch %d step %d loss %.4f", ep, step, loss.item())
            if step % args.save_every == 0 and rank == 0:
                path = os.path.join(args.out_dir, f"step_{step}.pt")
                torch.save({"model": model.module.state_dict(), "step": step}, path)
                log.info("saved %s", path)
            time.sleep(0.05)
    dist.barrier()
    log.info("finished %d steps", step)
    dist.destroy_process_group()


if __name__ == "__main__":
    args = make_parser().parse_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args, args.spawn), nprocs=args.spawn)
    else:
        worker(int(os.environ["LOCAL_RANK"]), args, None)
