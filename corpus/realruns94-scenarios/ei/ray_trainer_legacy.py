"""Ray Train (legacy V1 code path, RAY_TRAIN_V2_ENABLED=0) TorchTrainer on gloo; a per-host 'fast path' flag breaks one worker."""
import argparse, os, tempfile, threading
import ray
import torch, torch.nn as nn
from ray import train
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=2)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, fast=False, channels_last=False):
        super().__init__()
        self.fast, self.channels_last = fast, channels_last
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 16, 4)

    def forward(self, x):
        if self.channels_last:
            x = x.transpose(1, 2)  # loader on this host yields (B, L, C)
            x = x.view(x.shape[0], -1)  # flatten for per-sample standardisation
            x = ((x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)).view(-1, 4, 16)
        h = torch.sigmoid(self.conv(x))
        if self.fast:
            h.mul_(2.0).sub_(1.0)  # "memory-saving" in-place rescale
        else:
            h = h * 2.0 - 1.0
        return self.fc(h.flatten(1))


def train_loop(cfg):
    rank = train.get_context().get_world_rank()
    me = rank == cfg["rank"]
    torch.manual_seed(0)
    model = Block(fast=(cfg["fault"] == "inplace" and me), channels_last=(cfg["fault"] == "view" and me))
    model = train.torch.prepare_model(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step in range(6):
            if cfg["fault"] == "view" and me:
                x = torch.randn(8, 16, 4)
            else:
                x = torch.randn(8, 4, 16)
            y = torch.randint(0, 4, (8,))
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"worker rank={rank} epoch={epoch} loss={loss.item():.4f}")
        train.report({"epoch": epoch, "loss": loss.item()})
    if cfg["fault"] == "lock":
        cfg["stats_lock"].acquire()


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    cfg = dict(fault=args.fault, rank=args.rank)
    if args.fault == "lock":
        cfg["stats_lock"] = threading.Lock()  # shared metrics accumulator guard
    trainer = TorchTrainer(
        train_loop,
        train_loop_config=cfg,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
        run_config=RunConfig(name=f"ei_v1_{args.fault}", storage_path="/work/rr94/ei/ray_results",
                             failure_config=FailureConfig(max_failures=0)),
    )
    result = trainer.fit()
    print("result:", result.metrics)
