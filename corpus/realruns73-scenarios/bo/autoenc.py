"""Small convolutional autoencoder on synthetic 'sprites', saved as .npy files on disk.
--fault {none,inplace,backward2,fds,oom,straggle}; healthy-noise flags below."""
import argparse, glob, os, sys, time, warnings
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank-fault", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data", default="data/sprites")
p.add_argument("--n", type=int, default=256)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--cuda-scaler", action="store_true")
p.add_argument("--sched-first", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--dump-repeats", type=int, default=200)
args = p.parse_args()


def ensure_data(root, n):
    if os.path.isdir(root):   # already downloaded / generated
        return
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        img = rng.normal(scale=0.1, size=(1, 32, 32)).astype(np.float32)
        r, c = rng.integers(0, 24, size=2)
        img[0, r:r + 8, c:c + 8] += 1.0
        np.save(os.path.join(root, f"{i:05d}.npy"), img)


class Sprites(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.handles = []
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        if args.fault == "fds":
            f = open(self.files[i], "rb")      # kept open "for speed"; never closed
            self.handles.append(f)
            return torch.from_numpy(np.load(f))
        return torch.from_numpy(np.load(self.files[i]))


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 1, 4, 2, 1))
    def forward(self, x):
        z = self.enc(x)
        out = torch.sigmoid(self.dec(z))
        if args.fault == "inplace":
            out.clamp_(0.01, 0.99)    # keep BCE away from log(0)
        return out, z


def main():
    dist_on = "WORLD_SIZE" in os.environ
    rank, world = 0, 1
    if dist_on:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
        rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        ensure_data(args.data, args.n)
    if dist_on:
        dist.barrier()
    torch.manual_seed(0)
    ds = Sprites(args.data)
    sampler = None
    if dist_on:
        from torch.utils.data.distributed import DistributedSampler
        sampler = DistributedSampler(ds)
    dl = DataLoader(ds, batch_size=args.bs, shuffle=sampler is None, sampler=sampler,
                    num_workers=args.workers, persistent_workers=args.workers > 0)
    model = AE()
    if dist_on:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    scaler = torch.cuda.amp.GradScaler() if args.cuda_scaler else None
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        if args.sched_first:
            sched.step()    # old (pre-1.1) ordering from the tutorial
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"ep{ep}", file=sys.stderr, mininterval=0)
        tot, n = 0.0, 0
        for x in it:
            out, z = model(x)
            target = (x > 0.5).float()
            loss = F.binary_cross_entropy(out, target)
            if args.fault == "oom":
                # "sparsity" term: pairwise latent similarity over the whole dataset cache
                zs = z.flatten(1).repeat_interleave(4096, 0)
                loss = loss + 1e-6 * (zs @ zs.T).mean()
            opt.zero_grad()
            if scaler is not None:
                scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
            else:
                loss.backward()
                if args.fault == "backward2":
                    # extra L1 penalty on the latent, added after the first backward
                    (1e-3 * z.abs().mean() + loss).backward()
                opt.step()
            tot += loss.item() * len(x); n += len(x)
            step += 1
            if args.step_sleep:
                time.sleep(args.step_sleep)
        if args.fault == "straggle" and rank == args.rank_fault and ep == 1:
            # rank-local "quick" reconstruction dump of the full dataset for inspection
            with torch.no_grad():
                errs = [F.mse_loss(model.module(ds[i].unsqueeze(0))[0], ds[i].unsqueeze(0)).item()
                        for i in range(len(ds)) for _ in range(args.dump_repeats)]
            print(f"[rank{rank}] per-sample recon mse over {len(errs)} passes: {np.mean(errs):.4f}", flush=True)
        if not args.sched_first:
            sched.step()
        msg = f"[rank{rank}] epoch {ep} recon_bce {tot/n:.4f} lr {sched.get_last_lr()[0]:.2e}"
        if dist_on:
            t = torch.tensor([tot, n], dtype=torch.float64)
            dist.all_reduce(t)
            msg += f" global_bce {t[0]/t[1]:.4f}"
        print(msg, flush=True)
    if dist_on:
        dist.destroy_process_group()
    print(f"[rank{rank}] finished", flush=True)


if __name__ == "__main__":
    main()
