"""Training loop fed by a DataLoader with worker processes.
Each sample is a dict of per-field tensors (token ids, mask, a list of per-frame features).
Writes the worker pids to <rundir>/workers.pid for outside actors."""
import argparse, os, time, sys, warnings
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader, get_worker_info

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--frames", type=int, default=4, help="feature tensors per sample")
p.add_argument("--batch", type=int, default=16)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--n", type=int, default=512)
p.add_argument("--sharing", default="file_descriptor")
p.add_argument("--rundir", default="runs/tmp")
p.add_argument("--sample-delay", type=float, default=0.002)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

torch.multiprocessing.set_sharing_strategy(args.sharing)
os.makedirs(args.rundir, exist_ok=True)


def winit(wid):
    with open(os.path.join(args.rundir, "workers.pid"), "a") as f:
        f.write(f"{wid} {os.getpid()}\n")


class Frames(Dataset):
    def __len__(self):
        return args.n

    def __getitem__(self, i):
        time.sleep(args.sample_delay)
        g = torch.Generator().manual_seed(i)
        return {"ids": torch.randint(0, 100, (16,), generator=g),
                "frames": [torch.randn(8, generator=g) for _ in range(args.frames)],
                "y": torch.tensor(i % 3)}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
        self.out = nn.Linear(16, 3)

    def forward(self, ids, frames):
        a = self.emb(ids).mean(1)
        b = torch.stack(frames, 1).mean(1)
        return self.out(torch.cat([a, b], 1))


def main():
    torch.manual_seed(0)
    dl = DataLoader(Frames(), batch_size=args.batch, shuffle=True, num_workers=args.workers,
                    worker_init_fn=winit, persistent_workers=args.workers > 0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    print(f"sharing strategy: {torch.multiprocessing.get_sharing_strategy()}, workers={args.workers}", flush=True)
    for ep in range(args.epochs):
        it = dl
        if args.tqdm:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", ncols=90)
        tot = 0.0
        for k, b in enumerate(it):
            loss = nn.functional.cross_entropy(net(b["ids"], b["frames"]), b["y"])
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
            if not args.tqdm and k % 8 == 0:
                print(f"epoch {ep} batch {k} loss {loss.item():.4f}", flush=True)
        print(f"epoch {ep} mean loss {tot / (k + 1):.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
