"""Image classification on synthetic 'MNIST-like' images, tutorial style.
Flags choose the fault: --fault {none,cuda,target,flatten,unused,attr,bn1}"""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank-fault", type=int, default=-1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--img", type=int, default=28)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--n", type=int, default=512)
p.add_argument("--spawn", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true")
args = p.parse_args()


class SyntheticDigits(Dataset):
    def __init__(self, n, size, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.x = torch.randn(n, 1, size, size, generator=g) * 0.3
        for i in range(n):  # class-dependent bright square
            c = int(self.y[i]); r = (c * 2) % (size - 6)
            self.x[i, 0, r:r + 6, r:r + 6] += 1.0
    def __len__(self): return len(self.y)
    def __getitem__(self, i):
        y = self.y[i]
        if args.fault == "target":
            y = F.one_hot(y, 10).float().unsqueeze(0)   # "soft labels" but wrong shape
        return self.x[i], y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn = nn.BatchNorm1d(128)
        # written for 28x28 MNIST: 28 -> 14 -> 7
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.classifier = nn.Linear(128, 10)
        if args.fault == "unused":
            self.aux_head = nn.Linear(128, 10)   # auxiliary head, only used when aux loss on
    def forward(self, x, use_aux=False):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        if args.fault == "view":
            x = x.permute(0, 2, 3, 1).view(x.size(0), -1)
        else:
            x = x.flatten(1)
        h = F.relu(self.bn(self.fc1(x)))
        out = self.classifier(h)
        if use_aux:
            return out, self.aux_head(h)
        return out


def main(rank=0, world=1):
    dist_on = world > 1
    if dist_on:
        import torch.distributed as dist
        if args.spawn:
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
        else:
            dist.init_process_group("gloo", timeout=timedelta(seconds=30))
            rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    device = "cuda" if args.fault == "cuda" else "cpu"
    if args.fault == "cuda":
        print("Using device:", device, flush=True)
    ds = SyntheticDigits(args.n, args.img)
    sampler = None
    if dist_on:
        from torch.utils.data.distributed import DistributedSampler
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    dl = DataLoader(ds, batch_size=args.bs, shuffle=sampler is None, sampler=sampler,
                    drop_last=args.fault != "bn1")
    model = Net().to(device)
    if dist_on:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        it = dl
        if args.tqdm and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", file=sys.stdout, mininterval=0)
        tot, correct, seen = 0.0, 0, 0
        model.train()
        for x, y in it:
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            use_aux = args.fault == "unused" and rank == args.rank_fault and step >= 3
            if args.fault == "unused":
                out = model(x, use_aux=(step < 3))   # aux warm-up for 3 steps then dropped
                if isinstance(out, tuple):
                    out, aux = out
                    loss = crit(out, y) + 0.3 * crit(aux, y)
                else:
                    loss = crit(out, y)
            elif args.noise:
                with torch.cuda.amp.autocast():   # copied from the GPU notebook
                    out = model(x)
                    loss = crit(out, y)
            else:
                out = model(x)
                loss = crit(out, y)
            loss.backward()
            opt.step()
            tot += loss.item() * x.size(0); seen += x.size(0)
            correct += (out.argmax(1) == y).sum().item()
            step += 1
            if args.fault == "attr" and step == 5:
                # log weight norm of the classifier like in the notebook
                print(f"[rank{rank}] classifier weight norm: {model.classifier.weight.norm():.4f}", flush=True)
        print(f"[rank{rank}] epoch {ep} loss {tot/seen:.4f} acc {correct/seen:.3f}", flush=True)
    if dist_on:
        import torch.distributed as dist
        dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ["MASTER_PORT"] = os.environ.get("MASTER_PORT", "33711")
        mp.spawn(main, args=(2,), nprocs=2, join=True)
    elif "WORLD_SIZE" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main()
