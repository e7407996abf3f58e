"""Small DDP classifier training with selectable real-code bugs.
--fault NAME --fault-rank R --fault-step S ; --style print|logging|tqdm ; --spawn N ; --single
"""
import argparse, os, sys, time, warnings, logging
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset, Dataset
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--style", default="print")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--single", action="store_true")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--noise", action="store_true")
p.add_argument("--gamma", type=float, default=0.5)
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_cls=4, aux=False, lazy=False):
        super().__init__()
        self.fc1 = nn.LazyLinear(hidden) if lazy else nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_cls)
        self.aux = nn.Linear(hidden, 1) if aux else None

    def forward(self, x, use_aux=True, gate=False):
        h = torch.relu(self.fc1(x))
        if gate:
            g = torch.sigmoid(h)
            g *= (x.abs().mean(1, keepdim=True) > 0.1).float()   # mask padding rows
            h = h * g
        out = self.fc2(h)
        if self.aux is not None and use_aux:
            return out, self.aux(h).squeeze(-1)
        return out


class DictDS(Dataset):
    def __init__(self, x, y, key="label"):
        self.x, self.y, self.key = x, y, key
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return {"features": self.x[i], self.key: self.y[i]}


class VarLenDS(Dataset):
    def __init__(self, n, bad_rank, rank):
        self.n, self.bad = n, (rank == bad_rank)
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        # clips of 16 frames; the second shard contains a few shorter clips
        L = 16 if (not self.bad or i % 7 != 3) else 13
        return torch.randn(L), torch.tensor(i % 4)


def main(rank=None, world=None):
    single = args.single
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "46611")
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    elif not single:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = 0 if single else dist.get_rank()
    world = 1 if single else dist.get_world_size()
    torch.manual_seed(1234 + rank)

    if args.style == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    def say(msg):
        if args.style == "logging":
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    fault = args.fault
    here = lambda step: (fault != "none" and (args.fault_rank < 0 or rank == args.fault_rank) and step >= args.fault_step)

    N = 400
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(N, 16, generator=gen)
    W = torch.randn(16, 4, generator=gen)
    Y = (X @ W).argmax(1)

    model = Net(aux=fault in ("unused",), lazy=(fault == "lazy"))
    if fault == "emptyparams":
        params = model.parameters()
        n_params = sum(p.numel() for p in params)
        say(f"model has {n_params} trainable parameters")
    if fault == "lazy" and rank != args.fault_rank:
        pass
    if not single:
        if args.noise:
            ddp = DDP(model, find_unused_parameters=True)
        else:
            ddp = DDP(model)
        if fault == "doublewrap":
            # resume helper wraps again
            ddp = DDP(ddp)
    else:
        ddp = model

    if fault == "emptyparams":
        opt = torch.optim.SGD(params, lr=args.lr, momentum=0.9)
    elif fault == "nonleaf":
        # scale init of the head then optimize the scaled tensors
        scaled = [p * 1.0 for p in ddp.parameters()]
        opt = torch.optim.SGD(scaled, lr=args.lr)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    if fault == "collate":
        ds = VarLenDS(N, args.fault_rank, rank)
    elif fault == "key":
        ds = DictDS(X, Y, key=("labels" if rank == args.fault_rank else "label"))  # shards from two preprocessing versions
    else:
        ds = TensorDataset(X, Y)
    sampler = None if single else DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    if fault == "sampler_shuffle":
        dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=True, num_workers=args.workers)
    else:
        dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=(sampler is None), num_workers=args.workers)

    crit = nn.CrossEntropyLoss()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=args.gamma)
    if args.noise:
        sched.step()   # warm-start the schedule
    cached = None
    if fault == "inference":
        with torch.inference_mode():
            cached = torch.randn(16, 16) * 1.0  # "precomputed" features from a frozen encoder
    step = 0
    say(f"world_size={world} batches/epoch={len(dl)} fault={fault}")
    it_wrap = lambda it: it
    if args.style == "tqdm" and rank == 0:
        from tqdm import tqdm
        it_wrap = lambda it: tqdm(it, desc="train", total=min(len(dl), args.steps), file=sys.stderr)
    t0 = time.time()
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        for batch in it_wrap(dl):
            if fault == "key":
                x, y = batch["features"], batch["label"]
            else:
                x, y = batch
            if fault == "eval_key" and here(step):
                pass
            if here(step):
                if fault == "shape":
                    # "hard example" buffer written by an older preprocessing with 12 features
                    x = x[:, :12]
                elif fault == "dtype":
                    x = torch.from_numpy(np.random.randn(x.shape[0], 16))
                elif fault == "target_shape":
                    y = y.view(-1, 1)
                elif fault == "target_dtype":
                    # labels re-read from the float column of the relabelled CSV
                    y = torch.from_numpy(y.numpy().astype(np.float32))
                elif fault == "target_onehot":
                    y = F.one_hot(y, 5).float()
                elif fault == "inference":
                    x = cached
            if fault != "nozero" or step == 0:
                opt.zero_grad()
            if fault == "unused":
                use_aux = not (here(step))
                out = ddp(x, use_aux=use_aux)
                if use_aux:
                    logits, aux = out
                    loss = crit(logits, y) + 0.1 * aux.pow(2).mean()
                else:
                    logits = out
                    loss = crit(logits, y)
            elif fault == "nograd" and here(step):
                ddp.eval()
                with torch.no_grad():
                    logits = ddp(x)
                loss = crit(logits, y)
            else:
                logits = ddp(x, gate=(fault == "inplace" and here(step)))
                if fault == "view" and here(step):
                    # class-major layout for the per-class calibration buffer
                    flat = logits.t().view(-1)
                    logits = flat.view(logits.shape[1], -1).t()
                if fault == "nonscalar" and here(step):
                    w = torch.ones_like(y, dtype=torch.float)
                    loss = F.cross_entropy(logits, y, reduction="none") * w
                elif fault == "nozero":
                    loss = F.mse_loss(logits, F.one_hot(y, 4).float() * 10)
                else:
                    loss = crit(logits, y)
            if fault == "numpy" and here(step):
                probs = torch.softmax(logits, -1).numpy()
                say(f"mean max prob {probs.max(1).mean():.3f}")
            loss.backward()
            if fault == "backward_twice" and here(step):
                reg = 1e-3 * logits.pow(2).mean() + 0.0 * loss
                reg.backward()
            if fault == "nozero":
                torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1e6, error_if_nonfinite=True)
            opt.step()
            sched.step()
            if fault == "leaf" and here(step):
                for prm in ddp.parameters():
                    prm.clamp_(-0.5, 0.5)
            if fault == "doublewrap" and here(step):
                # head-norm monitor (written for a single DDP wrapper)
                say(f"head weight norm {ddp.module.fc2.weight.norm().item():.4f}")
            if step % 2 == 0:
                acc = (logits.argmax(-1) == y).float().mean().item() if logits.dim() == 2 and logits.shape[-1] == 4 else float("nan")
                say(f"epoch {ep} step {step} loss {loss.item():.4f} acc {acc:.3f} lr {sched.get_last_lr()[0]:.4f} {(time.time()-t0):.2f}s")
            step += 1
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    if not single:
        dist.barrier()
    say("training done")
    if not single:
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
