"""Ray Train TorchTrainer scenarios (2 gloo workers). --fault selects the bug."""
import argparse, os, sys, time, tempfile, warnings

import ray
from ray import train
import ray.train.torch as rtt
from ray.train import ScalingConfig, RunConfig, FailureConfig, CheckpointConfig
from ray.train.torch import TorchTrainer

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--storage", default="/work/rr108/fx/work/ray_results")
p.add_argument("--name", default="fx_train")
p.add_argument("--resume-from", default=None)
p.add_argument("--cpus-per-worker", type=float, default=1)
p.add_argument("--pg-timeout", type=int, default=60)
args = p.parse_args()


def train_loop(config):
    import torch
    import torch.nn as nn
    import torch.distributed as dist
    from torch.utils.data import DataLoader, TensorDataset, Dataset

    fault, frank, fstep = config["fault"], config["rank"], config["step"]
    ctx = train.get_context()
    rank = ctx.get_world_rank()
    world = ctx.get_world_size()
    torch.manual_seed(0)

    hidden = 32
    if fault == "model-mismatch" and rank == frank:
        hidden = 48  # rank built from a stale config
    model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))
    if fault == "unused-param":
        class WithAux(nn.Module):
            def __init__(self, body):
                super().__init__()
                self.body = body
                self.aux_head = nn.Linear(4, 4)  # auxiliary head; its loss term is only enabled by --aux-weight
            def forward(self, x):
                return self.body(x)
        model = WithAux(model)
    if config.get("resume_from"):
        ckpt = torch.load(config["resume_from"], map_location="cpu")
        model.load_state_dict(ckpt["model"])
        print(f"[rank {rank}] resumed from {config['resume_from']} (epoch {ckpt['epoch']})")
    model = rtt.prepare_model(model)

    g = torch.Generator().manual_seed(1234 + rank)
    X = torch.randn(512, 16, generator=g)
    y = (X[:, :4].sum(1) > 0).long() + (X[:, 4] > 0.5).long()
    ds = TensorDataset(X, y)

    if fault == "missing-shard":
        shard = f"/work/rr108/fx/work/shards/train-{rank:05d}-of-{world:05d}.pt"
        X2, y2 = torch.load(shard)
        ds = TensorDataset(X2, y2)

    class Aug(Dataset):
        def __init__(self, base):
            self.base = base
        def __len__(self):
            return len(self.base)
        def __getitem__(self, i):
            x, t = self.base[i]
            if fault == "loader-worker" and rank == frank and i == 37:
                # off-by-one bug in the jitter table lookup for one index range
                jit = [0.1] * 37
                x = x + jit[i]
            return x, t

    nw = 1 if fault == "loader-worker" else 0
    loader = DataLoader(Aug(ds), batch_size=16, shuffle=False, num_workers=nw)
    loader = rtt.prepare_data_loader(loader)
    lr = 0.05
    if fault == "nan" and rank == frank:
        lr = 1e6  # lr from a typo'd sweep value 1e6 instead of 1e-6
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    lossf = nn.CrossEntropyLoss()
    if fault == "warn":
        sched.step()  # stepped once at setup (copied from an old recipe) -> torch warns
        w = torch.tensor(torch.ones(4))  # class weights built with torch.tensor(tensor) -> warns
        lossf = nn.CrossEntropyLoss(weight=w)

    step = 0
    for epoch in range(config["epochs"]):
        if world > 1 and hasattr(loader, "sampler") and hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(epoch)
        tot = 0.0
        for xb, yb in loader:
            step += 1
            if fault == "shape" and rank == frank and step == fstep:
                xb = xb.reshape(-1, 8)  # buggy reshape for "patch" augmentation
            if fault == "oom" and rank == frank and step == fstep:
                n_tokens = xb.numel() * 10**9  # meant xb.numel() * 10**3
                buf = torch.empty(n_tokens, dtype=torch.float32)
            if fault == "sigkill" and rank == frank and step == fstep:
                os.kill(os.getpid(), 9)
            if fault == "exit" and rank == frank and step == fstep:
                os._exit(3)
            if fault == "stall" and rank == frank and step == fstep:
                # next chunk comes from a named pipe fed by a preprocessing job that has died
                fifo = "/work/rr108/fx/work/feed.fifo"
                if not os.path.exists(fifo):
                    os.mkfifo(fifo)
                print(f"[rank {rank}] waiting for next chunk from {fifo}")
                with open(fifo, "rb") as fh:
                    fh.read(1)
            out = model(xb)
            loss = lossf(out, yb)
            if fault == "metric-sync":
                counts = torch.bincount(yb).float()  # per-class label histogram, summed across ranks
                dist.all_reduce(counts)
            if fault == "nan" and not torch.isfinite(loss):
                raise FloatingPointError(f"rank {rank}: non-finite loss {loss.item()} at step {step}")
            opt.zero_grad()
            loss.backward()
            opt.step()
            if fault != "warn":
                sched.step()
            tot += loss.item()
            if step % 4 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step} loss {loss.item():.4f}")
        avg = tot / max(1, len(loader))
        if fault == "eval-rank0" and rank == 0:
            # validation only on the "main" process, but the helper averages across ranks
            with torch.no_grad():
                vx = torch.randn(64, 16)
                vl = lossf(model(vx), (vx[:, :4].sum(1) > 0).long()).reshape(1)
                dist.all_reduce(vl)
                print(f"[rank 0] epoch {epoch} val_loss {vl.item() / world:.4f}")
        metrics = {"epoch": epoch, "loss": avg}
        if config["ckpt_dir"] is not None and rank == 0:
            os.makedirs(config["ckpt_dir"], exist_ok=True)
            path = os.path.join(config["ckpt_dir"], f"model_epoch{epoch}.pt")
            sd = model.state_dict()  # note: DDP-wrapped when world_size > 1
            torch.save({"model": sd, "epoch": epoch}, path)
            print(f"[rank 0] saved {path}")
        with tempfile.TemporaryDirectory() as d:
            if rank == 0:
                sd = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
                torch.save({"model": sd, "epoch": epoch}, os.path.join(d, "model.pt"))
                train.report(metrics, checkpoint=train.Checkpoint.from_directory(d))
            else:
                train.report(metrics)


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False)
    ckpt_dir = None
    if args.fault in ("none", "ckpt-perm", "warn"):
        ckpt_dir = "/work/rr108/fx/work/ckpts/" + args.name
    if args.fault == "ckpt-perm":
        ckpt_dir = "/work/rr108/fx/work/shared_ckpt/" + args.name
    if args.fault == "warn":
        warnings.warn("torch.distributed: gloo backend selected on a CPU-only node; this is slower than NCCL", UserWarning)
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"fault": args.fault, "rank": args.rank, "step": args.step,
                           "epochs": args.epochs, "ckpt_dir": ckpt_dir, "resume_from": args.resume_from},
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                     resources_per_worker={"CPU": args.cpus_per_worker}),
        torch_config=rtt.TorchConfig(backend="gloo", timeout_s=args.pg_timeout),
        run_config=RunConfig(name=args.name, storage_path=args.storage,
                             failure_config=FailureConfig(max_failures=0),
                             checkpoint_config=CheckpointConfig(num_to_keep=1)),
    )
    result = trainer.fit()
    print("Training finished. metrics:", result.metrics)
    print("best checkpoint:", result.checkpoint)
    ray.shutdown()
