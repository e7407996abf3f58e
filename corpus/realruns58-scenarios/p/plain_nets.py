"""Small plain-PyTorch training jobs (CNN / LSTM / MLP / embedding bag) with selectable faults.

Launch plain `python`, via torchrun (env RANK set) or with --spawn N (torch.multiprocessing.spawn).
"""
import argparse, os, sys, time, logging, math, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--net", default="cnn")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=29851)
p.add_argument("--log", "--pylog", dest="log", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--ckpt", default="/work/rr58/p/tmp/ckpt")
p.add_argument("--lr", type=float, default=1e-2)
args = p.parse_args()


def out(rank, msg):
    if args.log:
        logging.getLogger("train").info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


class SmallCNN(nn.Module):
    def __init__(self, n_cls=10, flat=None):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        # written for 32x32 CIFAR inputs: 16 * 8 * 8
        self.fc = nn.Linear(flat or 16 * 8 * 8, n_cls)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        if args.fault == "view":
            x = x.permute(0, 2, 3, 1)  # NHWC for a "channels last" head
            x = x.view(x.size(0), -1)
        else:
            x = torch.flatten(x, 1)
        return self.fc(x)


class CharLSTM(nn.Module):
    def __init__(self, vocab=50, hid=32, layers=1, sparse=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, 16, sparse=sparse)
        self.lstm = nn.LSTM(16, hid, layers, batch_first=True)
        self.head = nn.Linear(hid, vocab)
        self.aux = nn.Linear(hid, 2)  # auxiliary head, only used when --fault aux

    def forward(self, x, h=None, use_aux=False):
        e = self.emb(x)
        o, h = self.lstm(e, h)
        if args.fault == "inplace":
            o = torch.sigmoid(o)
            o.mul_(2.0)  # rescale in place
        logits = self.head(o)
        if use_aux:
            return logits, self.aux(o[:, -1]), h
        return logits, h


class MLP(nn.Module):
    def __init__(self, d_in=20, hid=64, n_out=3, layers=2):
        super().__init__()
        mods = []
        d = d_in
        for _ in range(layers):
            mods += [nn.Linear(d, hid), nn.ReLU()]
            d = hid
        mods.append(nn.Linear(d, n_out))
        self.net = nn.Sequential(*mods)

    def forward(self, x):
        return self.net(x)


class VarLenDS(Dataset):
    """Tokenised sentences of different length, as read from a jsonl file."""
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.items = [torch.randint(1, 50, (int(torch.randint(5, 13, (1,), generator=g)),), generator=g) for _ in range(n)]
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        x = self.items[i]
        return {"input_ids": x, "label": int(x.sum() % 2)}


def setup(rank, world):
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))


def run(rank, world):
    if args.log:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s: %(message)s", force=True)
    setup(rank, world)
    torch.manual_seed(0 + rank)
    faulty = args.fault_rank < 0 or args.fault_rank == rank
    ddp = world > 1

    if args.net == "cnn":
        img = 28 if (args.fault == "shape" and faulty) else 32  # MNIST-sized images fed to a CIFAR head
        chans = 3
        X = torch.randn(256, chans, img, img)
        if args.fault == "shape" and faulty:
            X = X.expand(256, 3, img, img).contiguous()
        y = torch.randint(0, 10, (256,))
        if args.fault == "dtype" and faulty:
            Xn = np.random.rand(256, 3, 32, 32)  # numpy float64 from an augmentation pipeline
            X = torch.from_numpy(Xn)
        model = SmallCNN()
        ds = TensorDataset(X, y)
    elif args.net == "lstm":
        model = CharLSTM(sparse=(args.fault == "sparse_adam"))
        ds = None
    elif args.net == "mlp":
        model = MLP()
        X = torch.randn(512, 20)
        y = torch.randint(0, 3, (512,))
        if args.fault == "mse_long":
            y = (X[:, 0] > 0).long()
        if args.fault == "label_range" and faulty:
            # labels read from a csv where classes are 1..3 instead of 0..2
            y = y + 1
        ds = TensorDataset(X, y)
    elif args.net == "varlen":
        model = CharLSTM()
        ds = VarLenDS()

    if args.fault == "model_mismatch" and rank == args.fault_rank:
        # this rank read an older config file with 3 hidden layers
        model = MLP(layers=3)

    if args.fault == "sd_mismatch" or args.fault == "optim_state":
        os.makedirs(args.ckpt, exist_ok=True)
        path = os.path.join(args.ckpt, f"{args.net}_pretrain.pt")
        if rank == 0:
            old = MLP(hid=32) if args.fault == "sd_mismatch" else MLP(layers=1)
            oopt = torch.optim.AdamW(old.parameters(), lr=1e-3)
            old(torch.randn(4, 20)).sum().backward(); oopt.step()
            torch.save({"model": old.state_dict() if args.fault == "sd_mismatch" else model.state_dict(), "optimizer": oopt.state_dict(), "epoch": 3}, path)
            out(rank, f"found checkpoint {path}")
        if ddp:
            dist.barrier()
        ck = torch.load(path, map_location="cpu")
        out(rank, f"resuming from epoch {ck['epoch']}")
        model.load_state_dict(ck["model"])

    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, find_unused_parameters=(args.fault == "healthy_fup"))

    if args.fault == "leaf":
        opt = None
    else:
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    if args.fault == "optim_state":
        opt.load_state_dict(ck["optimizer"])
        out(rank, "optimizer state restored")

    if args.fault == "sched_warn":
        sched = torch.optim.lr_scheduler.StepLR(opt, 2)
        sched.step()  # called at the start of the epoch (before optimizer.step())

    if ds is not None:
        if ddp:
            from torch.utils.data.distributed import DistributedSampler
            dl = DataLoader(ds, batch_size=16, sampler=DistributedSampler(ds), num_workers=args.workers)
        else:
            dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers)
        it = iter(dl)

    crit = nn.CrossEntropyLoss(reduction="none" if args.fault == "nonscalar" else "mean")
    h = None
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr, mininterval=0)
    anomaly = torch.autograd.detect_anomaly() if args.fault == "anomaly" else None
    if anomaly:
        anomaly.__enter__()
    losses = []
    for step in range(args.steps):
        if args.net == "lstm":
            x = torch.randint(0, 50, (8, 21))
            inp, tgt = x[:, :-1], x[:, 1:]
            if args.fault == "tbptt":
                # truncated BPTT: carry hidden state across chunks (forgot .detach())
                logits, h = model(inp, h)
            else:
                logits, _ = model(inp)
            loss = crit(logits.reshape(-1, 50), tgt.reshape(-1))
        else:
            try:
                xb, yb = next(it)
            except StopIteration:
                it = iter(dl); xb, yb = next(it)
            except TypeError:
                raise
            if isinstance(xb, str):
                pass
            if args.fault == "noGrad_eval" and step >= args.fault_step:
                with torch.no_grad():  # reused evaluate() helper inside the train loop
                    logits = model(xb)
            else:
                logits = model(xb)
            if args.fault == "mse_long":
                loss = F.mse_loss(logits[:, 0], yb)
            elif args.fault == "anomaly":
                prob = F.softmax(logits * (1e4 if step >= args.fault_step else 1.0), dim=-1)
                loss = -(torch.log(prob.gather(1, yb[:, None]))).mean()
            else:
                loss = crit(logits, yb)
        if args.fault == "leaf":
            loss.backward()
            for p_ in model.parameters():
                p_ -= args.lr * p_.grad  # manual SGD update
                p_.grad = None
        elif args.fault == "frozen":
            loss.backward()
            opt.zero_grad()  # "clear grads before stepping"
            opt.step()
        else:
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        losses.append(loss.item() if loss.dim() == 0 else float(loss.mean()))
        if bar:
            bar.update(1); bar.set_postfix(loss=f"{losses[-1]:.4f}")
        elif step % 1 == 0:
            extra = ""
            if args.fault in ("frozen", "healthy_fup"):
                extra = f" |w|={sum(p_.detach().norm()**2 for p_ in model.parameters())**0.5:.6f}"
            out(rank, f"step {step} loss {losses[-1]:.4f} lr {args.lr:g}{extra}")
        if args.fault == "sched_warn":
            sched.step()
    if bar:
        bar.close()
    if args.fault == "frozen":
        out(rank, f"epoch 0 done: mean loss {sum(losses)/len(losses):.4f}  first/last loss {losses[0]:.4f}/{losses[-1]:.4f}")
    out(rank, "training finished")
    if ddp:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(args.port)
        mp.spawn(run, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        run(0, 1)
