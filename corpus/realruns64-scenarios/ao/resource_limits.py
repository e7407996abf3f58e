"""Resource limits hit during training: address-space limit (ulimit -v) on a big allocation,
file-descriptor limit (ulimit -n) with a leaking shard reader or DataLoader workers,
file-size limit (ulimit -f) when writing a checkpoint, process limit (ulimit -u) when
DataLoader workers are forked."""
import os, sys, time, glob
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *
import numpy as np


class MultiFieldDataset(Dataset):
    """record with many per-sample feature fields (each becomes its own tensor in the batch)"""
    def __init__(self, base, n_fields=24):
        self.base, self.n_fields = base, n_fields
    def __len__(self):
        return len(self.base)
    def __getitem__(self, i):
        x, y = self.base[i]
        rec = {f"feat_{k}": x * (k + 1) for k in range(self.n_fields)}
        rec["x"], rec["y"] = x, y
        return rec


class ShardDataset(Dataset):
    """Reads samples from many small .npy shard files (opens the file per sample)."""
    def __init__(self, root, leak=False):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.leak = leak
        self._open = []

    def __len__(self):
        return len(self.files) * 8

    def __getitem__(self, i):
        f = open(self.files[i // 8], "rb")
        arr = np.load(f)
        if self.leak:
            self._open.append(f)   # bug: handle kept for "prefetch" and never closed
        else:
            f.close()
        x = torch.from_numpy(arr[i % 8]).float()
        return x, int(x.sum() > 0) % 4


def make_shards(root, n=400):
    os.makedirs(root, exist_ok=True)
    if len(glob.glob(os.path.join(root, "*.npy"))) >= n:
        return
    rng = np.random.default_rng(0)
    for k in range(n):
        np.save(os.path.join(root, f"shard_{k:05d}.npy"), rng.standard_normal((8, 32)).astype("float32"))


def main():
    p = base_parser()
    p.add_argument("--eval-vocab", type=int, default=50257)
    p.add_argument("--eval-samples", type=int, default=512)
    p.add_argument("--eval-seq", type=int, default=128)
    args = p.parse_args()
    distributed = "RANK" in os.environ
    if distributed:
        rank, world = init_dist(args.timeout)
    else:
        rank, world = 0, 1
    log = setup_logger(rank, args.logstyle)
    log(f"start: world_size={world} fault={args.fault}")

    if args.fault in ("fds", "fds-workers", "nproc"):
        root = os.path.join(args.out, "shards")
        if rank == 0:
            make_shards(root)
        if distributed:
            dist.barrier()
        ds = ShardDataset(root, leak=(args.fault == "fds" and rank == args.fault_rank))
        if args.fault == "fds-workers":
            ds = MultiFieldDataset(ds)
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
        dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None,
                        num_workers=args.workers, prefetch_factor=4 if args.workers else None)
        model = make_model()
        ddp = DDP(model) if distributed else model
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        lossf = nn.CrossEntropyLoss()
        for epoch in range(args.epochs):
            if sampler is not None:
                sampler.set_epoch(epoch)
            for step, batch in enumerate(dl):
                x, y = (batch["x"], batch["y"]) if isinstance(batch, dict) else batch
                loss = lossf(ddp(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
                if step % 5 == 0:
                    log(f"epoch {epoch} step {step}/{len(dl)} loss {loss.item():.4f}")
                time.sleep(0.02)
        log("done")
    else:
        def hook(step):
            if step != args.fault_step:
                return
            if args.fault == "oom" and rank == args.fault_rank:
                # eval: keep full-vocab logits of the whole eval set to compute perplexity later
                log(f"step {step}: running eval on {args.eval_samples} samples x {args.eval_seq} tokens")
                logits = torch.empty(args.eval_samples, args.eval_seq, args.eval_vocab)
                log(f"allocated logits buffer {tuple(logits.shape)}")
            if args.fault == "cputime" and rank == args.fault_rank:
                log(f"step {step}: enabling on-the-fly feature augmentation (numpy, per batch)")
                args.heavy = True
            if args.fault == "fsize" and rank == 0:
                os.makedirs(args.out, exist_ok=True)
                big = make_model(d=32, h=2048)
                path = os.path.join(args.out, f"checkpoint-step{step}.pt")
                log(f"step {step}: saving checkpoint to {path}")
                with open(path, "wb") as fh:
                    torch.save({"model": big.state_dict(), "step": step}, fh, _use_new_zipfile_serialization=False)
                log("checkpoint saved")
        def hook2(step):
            hook(step)
            if getattr(args, "heavy", False):
                a = np.random.rand(400, 400)
                for _ in range(6):
                    a = np.linalg.qr(a)[0]
        train(args, rank, world, hook2, log)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
