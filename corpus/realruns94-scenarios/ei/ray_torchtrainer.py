"""Ray Train TorchTrainer (gloo, CPU) regression/classifier training; --fault injects a bug on one worker."""
import argparse, os, signal, resource, tempfile, time, warnings, logging
import ray
import torch, torch.nn as nn, torch.distributed as dist
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--data-dir", default="/work/rr94/ei/data")
p.add_argument("--ckpt-dir", default="/work/rr94/ei/ckpt")
p.add_argument("--logging", action="store_true")
p.add_argument("--noisy", action="store_true")
args = p.parse_args()

if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("trainer")


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_cls=4, vocab=None):
        super().__init__()
        self.vocab = vocab
        if vocab:
            self.emb = nn.Embedding(vocab, d_in)
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_cls)

    def forward(self, x):
        if self.vocab:
            x = self.emb(x).mean(1)
        return self.fc2(torch.relu(self.fc1(x)))


def train_loop(cfg):
    import ray.train as rt
    ctx = rt.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    fault, frank, fstep = cfg["fault"], cfg["rank"], cfg["step"]
    me = rank == frank
    torch.manual_seed(0)
    d_in = 16
    vocab = 100 if fault == "embed" else None
    hidden = 32
    if fault == "ddp-model" and me:
        hidden = 48  # rank-specific config override from a stale yaml
    model = Net(d_in, hidden, 4, vocab)
    if cfg["noisy"]:
        warnings.warn("torch.nn.utils.weight_norm is deprecated in favor of torch.nn.utils.parametrizations.weight_norm.", FutureWarning)
    model = rt.torch.prepare_model(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05 if not (fault == "nan" and me) else 1e6)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4)
    if cfg["noisy"]:
        sched.step()  # called before opt.step -> UserWarning about order
    lossf = nn.CrossEntropyLoss()

    shard_path = os.path.join(cfg["data_dir"], f"shard_{rank:02d}.pt")
    if fault == "missing-shard":
        data = torch.load(shard_path)  # each worker reads its own shard
    elif fault == "corrupt-ckpt" and me:
        model.load_state_dict(torch.load(os.path.join(cfg["data_dir"], f"warmstart_rank{rank}.pt")))
        data = None
    else:
        data = None
    if fault == "rlimit" and me:
        soft = 1200 * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
        print(f"[rank{rank}] RLIMIT_AS set to {soft >> 20} MiB (cgroup-like cap from job template)", flush=True)
    if fault == "nofile" and me:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    g = torch.Generator().manual_seed(rank)
    for epoch in range(cfg["epochs"]):
        tot = 0.0
        for step in range(cfg["steps"]):
            gstep = epoch * cfg["steps"] + step
            if vocab:
                hi = 100 if not me else 128  # rank uses tokenizer with added special tokens
                x = torch.randint(0, hi, (8, 12), generator=g)
            else:
                x = torch.randn(8, d_in, generator=g)
                if fault == "shape" and me and gstep >= fstep:
                    x = torch.randn(8, d_in + 4, generator=g)  # feature pipeline v2 adds 4 columns on this host
            y = torch.randint(0, 4, (8,), generator=g)
            if fault == "target" and me and gstep >= fstep:
                y = torch.nn.functional.one_hot(y, 4).float()[:, :3]
            if fault == "kill" and me and gstep == fstep:
                print(f"[rank{rank}] step {gstep}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            if fault == "rlimit" and me and gstep == fstep:
                buf = torch.empty(400 * 1024 * 1024, dtype=torch.float32)  # activation cache
            if fault == "nofile" and me and gstep == fstep:
                handles = [open(os.path.join(cfg["data_dir"], "vocab.txt")) for _ in range(100)]
            out = model(x)
            loss = lossf(out, y)
            if fault == "skip-allreduce":
                t = torch.tensor([loss.item()])
                if not (me and gstep == fstep):
                    dist.all_reduce(t)
            if fault == "nan" and not torch.isfinite(loss):
                raise FloatingPointError(f"Non-finite loss {loss.item()} at epoch {epoch} step {gstep} on rank {rank}")
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            if cfg["noisy"] and step % 4 == 0:
                print(f"epoch={epoch} step={gstep} rank={rank} loss={loss.item():.4f}", flush=True)
        if fault == "disk-full" and me and epoch == 0:
            torch.save(model.state_dict(), os.path.join(cfg["ckpt_dir"], f"rank{rank}_opt_state.pt"))
        metrics = {"epoch": epoch, "loss": tot / cfg["steps"]}
        if rank == 0:
            with tempfile.TemporaryDirectory() as d:
                torch.save(model.state_dict(), os.path.join(d, "model.pt"))
                rt.report(metrics, checkpoint=rt.Checkpoint.from_directory(d))
        else:
            rt.report(metrics)


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    cfg = dict(fault=args.fault, rank=args.rank, step=args.step, epochs=args.epochs, steps=args.steps,
               data_dir=args.data_dir, ckpt_dir=args.ckpt_dir, noisy=args.noisy)
    trainer = TorchTrainer(
        train_loop,
        train_loop_config=cfg,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
        run_config=RunConfig(name=f"ei_{args.fault}", storage_path="/work/rr94/ei/ray_results",
                             failure_config=FailureConfig(max_failures=0)),
    )
    result = trainer.fit()
    print("Training finished. metrics:", result.metrics)
    print("checkpoint:", result.checkpoint)
